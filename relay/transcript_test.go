package relay

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
)

func TestPlaceOfFollowsTheCLIsConfigDir(t *testing.T) {
	u := &RunAs{Name: "claude", UID: 1001, GID: 1001, Home: "/home/claude"}
	for _, tc := range []struct {
		name string
		env  []string
		user *RunAs
		want transcriptPlace
	}{
		{"home", []string{"HOME=/root", "HOME=/srv/home"}, nil, transcriptPlace{root: "/srv/home", dir: ".claude"}},
		{"config dir", []string{"HOME=/srv/home", "CLAUDE_CONFIG_DIR=/var/lib/claude/"}, nil, transcriptPlace{root: "/var/lib/claude", dir: "."}},
		{"relative config dir is not trusted", []string{"HOME=/srv/home", "CLAUDE_CONFIG_DIR=cfg"}, nil, transcriptPlace{root: "/srv/home", dir: ".claude"}},
		{"another user's home", []string{"HOME=/root"}, u, transcriptPlace{root: "/home/claude", dir: ".claude", owner: u}},
		{"another user's config dir", []string{"HOME=/root", "CLAUDE_CONFIG_DIR=/etc/claude"}, u, transcriptPlace{root: "/etc/claude", dir: ".", owner: u}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := placeOf(tc.env, tc.user); got != tc.want {
				t.Errorf("placeOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestUnpackRefusesWhatNoWorkerSaved(t *testing.T) {
	good, err := packTranscript("-srv-repo", []byte("line\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p, c, err := unpackTranscript(good, 100); err != nil || p != "-srv-repo" || string(c) != "line\n" {
		t.Fatalf("unpack = %q, %q, %v", p, c, err)
	}
	for _, tc := range []struct {
		name    string
		project string
		content []byte
		limit   int64
	}{
		{"a path out of the config dir", "../../etc", []byte("x"), 100},
		{"two directories", "a/b", []byte("x"), 100},
		{"no project", "", []byte("x"), 100},
		{"over the limit once inflated", "-srv", bytes.Repeat([]byte("a"), 1000), 999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			packed, err := packTranscript(tc.project, tc.content)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := unpackTranscript(packed, tc.limit); err == nil {
				t.Error("unpacked; want a refusal")
			}
		})
	}
	if _, _, err := unpackTranscript([]byte("not gzip"), 100); err == nil {
		t.Error("unpacked garbage")
	}
}

// newTranscripts returns transcripts kept under a temp directory, in a
// real store holding one session.
func newTranscripts(t *testing.T, owner *RunAs) (*transcripts, string) {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "slackgate.db"), boltstore.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	id := "0b7c1a2e-5d4f-4e3a-9c8b-7a6f5e4d3c2b"
	if err := st.CreateSession(t.Context(), store.Session{ID: id, State: store.SessionRunning}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if owner != nil {
		// The user's home: the worker reaches it with the user's rights,
		// so it lies where the user can reach it (t.TempDir's parent is
		// root's, 0700).
		var err error
		if root, err = os.MkdirTemp("", "slackgate-home-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(root) })
		if err := os.Chown(root, int(owner.UID), int(owner.GID)); err != nil {
			t.Fatal(err)
		}
	}
	return &transcripts{st: st, place: transcriptPlace{root: root, dir: ".claude", owner: owner}, max: 1 << 20}, id
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// What the CLI's user plants in its config dir (symlinks out of it, a
// file of someone else's) never travels to the store.
func TestSaveTakesOnlyTheCLIUsersOwnFile(t *testing.T) {
	ctx, log := context.Background(), zerolog.New(zerolog.NewTestWriter(t))
	secret := filepath.Join(t.TempDir(), "secret")
	writeFile(t, secret, "not the CLI's")
	t.Run("a symlinked project directory", func(t *testing.T) {
		tr, id := newTranscripts(t, nil)
		outside := filepath.Join(t.TempDir(), "proj")
		writeFile(t, filepath.Join(outside, id+".jsonl"), "outside")
		must(t, os.MkdirAll(filepath.Join(tr.place.root, ".claude", "projects"), 0o700))
		must(t, os.Symlink(outside, filepath.Join(tr.place.root, ".claude", "projects", "-srv")))
		tr.save(ctx, id, fileStamp{}, log)
		requireNoTranscript(t, tr, id)
	})
	t.Run("a symlinked file", func(t *testing.T) {
		tr, id := newTranscripts(t, nil)
		dir := filepath.Join(tr.place.root, ".claude", "projects", "-srv")
		must(t, os.MkdirAll(dir, 0o700))
		must(t, os.Symlink(secret, filepath.Join(dir, id+".jsonl")))
		tr.save(ctx, id, fileStamp{}, log)
		requireNoTranscript(t, tr, id)
	})
	t.Run("projects symlinked out of the config dir", func(t *testing.T) {
		tr, id := newTranscripts(t, nil)
		outside := t.TempDir()
		writeFile(t, filepath.Join(outside, "-srv", id+".jsonl"), "outside")
		must(t, os.MkdirAll(filepath.Join(tr.place.root, ".claude"), 0o700))
		must(t, os.Symlink(outside, filepath.Join(tr.place.root, ".claude", "projects")))
		tr.save(ctx, id, fileStamp{}, log)
		requireNoTranscript(t, tr, id)
	})
	t.Run("its own file travels", func(t *testing.T) {
		tr, id := newTranscripts(t, nil)
		writeFile(t, filepath.Join(tr.place.root, ".claude", "projects", "-srv", id+".jsonl"), "mine\n")
		stamp := tr.save(ctx, id, fileStamp{}, log)
		packed, err := tr.st.LoadTranscript(ctx, id)
		must(t, err)
		if p, c, err := unpackTranscript(packed, 100); err != nil || p != "-srv" || string(c) != "mine\n" {
			t.Fatalf("stored %q %q %v", p, c, err)
		}
		if stamp.size != 5 {
			t.Errorf("stamp %+v", stamp)
		}
	})
	t.Run("over the bound it stays on disk", func(t *testing.T) {
		tr, id := newTranscripts(t, nil)
		tr.max = 4
		writeFile(t, filepath.Join(tr.place.root, ".claude", "projects", "-srv", id+".jsonl"), "mine\n")
		tr.save(ctx, id, fileStamp{}, log)
		requireNoTranscript(t, tr, id)
	})
}

func requireNoTranscript(t *testing.T, tr *transcripts, id string) {
	t.Helper()
	if b, err := tr.st.LoadTranscript(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the store holds %q (%v); want nothing saved", b, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// With CLAUDE_USER the restored file and the directories made for it are
// the CLI user's and private to it, and a file of someone else's in its
// config dir is not saved.
func TestRestoreWritesTheCLIUsersPrivateFile(t *testing.T) {
	u, err := LookupRunAs(relaytest.OSUser(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, log := context.Background(), zerolog.New(zerolog.NewTestWriter(t))
	tr, id := newTranscripts(t, u)
	packed, err := packTranscript("-srv-repo", []byte("the conversation\n"))
	must(t, err)
	must(t, tr.st.SaveTranscript(ctx, id, packed))
	stamp, found, err := tr.restore(ctx, id, log)
	if err != nil || !found || stamp.size != int64(len("the conversation\n")) {
		t.Fatalf("restore = %+v, %v, %v", stamp, found, err)
	}
	file := filepath.Join(tr.place.root, ".claude", "projects", "-srv-repo", id+".jsonl")
	for _, p := range []string{filepath.Join(tr.place.root, ".claude"), filepath.Dir(file), file} {
		fi, err := os.Lstat(p)
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != u.UID || st.Gid != u.GID || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: uid %d gid %d mode %v; want %d:%d, private", p, st.Uid, st.Gid, fi.Mode(), u.UID, u.GID)
		}
	}
	// A root-owned file where the CLI's would be (a hard link to one,
	// say) is not read.
	must(t, os.Chown(file, 0, 0))
	must(t, os.WriteFile(file, []byte(strings.Repeat("root's\n", 10)), 0o600))
	tr.save(ctx, id, fileStamp{}, log)
	got, err := tr.st.LoadTranscript(ctx, id)
	must(t, err)
	if !bytes.Equal(got, packed) {
		t.Error("a file the CLI's user does not own was saved")
	}
}

// The CLI only appends to a transcript, so of the worker's own file and
// the store's copy the longer is the later: a worker the session comes
// back to replaces its stale file, and keeps one the store has not caught
// up with.
func TestRestoreKeepsTheLongerTranscript(t *testing.T) {
	ctx, log := context.Background(), zerolog.New(zerolog.NewTestWriter(t))
	tr, id := newTranscripts(t, nil)
	file := filepath.Join(tr.place.root, ".claude", "projects", "-srv", id+".jsonl")
	packed, err := packTranscript("-srv", []byte("turn 1\nturn 2 elsewhere\n"))
	must(t, err)
	must(t, tr.st.SaveTranscript(ctx, id, packed))

	writeFile(t, file, "turn 1\n") // left from before the session moved on
	stamp, found, err := tr.restore(ctx, id, log)
	if err != nil || !found || stamp == (fileStamp{}) {
		t.Fatalf("restore = %+v, %v, %v", stamp, found, err)
	}
	if b, _ := os.ReadFile(file); string(b) != "turn 1\nturn 2 elsewhere\n" {
		t.Fatalf("a stale file was kept: %q", b)
	}

	writeFile(t, file, "turn 1\nturn 2 elsewhere\nturn 3 not saved yet\n")
	stamp, found, err = tr.restore(ctx, id, log)
	if err != nil || !found || stamp != (fileStamp{}) {
		t.Fatalf("restore = %+v, %v, %v; want the own file kept, to be saved next", stamp, found, err)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "turn 3") {
		t.Fatalf("the worker's longer file was replaced: %q", b)
	}
}
