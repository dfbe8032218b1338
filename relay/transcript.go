package relay

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/slackgate/slackgate/store"
)

// Transcripts travel between workers through the store. The CLI keeps a
// session's conversation in one JSONL file under its config directory
// ($CLAUDE_CONFIG_DIR, else $HOME/.claude):
//
//	projects/<project>/<session id>.jsonl
//
// where <project> is the session's working directory, symlinks resolved,
// with every character but an ASCII letter or digit replaced by '-' (a
// name over 200 characters is cut and given a hash suffix of the CLI's
// own). Seen on 2.1.197 and 2.1.330. `--resume` finds nothing without that
// file, so a worker saves it to the store when a turn ends and when its
// process exits, and a worker about to resume a session restores it first.
//
// The file is saved gzipped, with <project> as the gzip header's name, and
// restored into the same project directory: workers see the same working
// directories, so the name found on one worker is the one the CLI looks
// for on another, whatever rule the CLI uses to make it.
//
// The config directory belongs to the user the CLI runs as, who may be
// another, less trusted, OS user (CLAUDE_USER) able to plant symlinks
// there. Every read and write goes through an os.Root opened at that
// directory (or the user's home), which refuses to leave it, is made with
// that user's rights on files (RunAs.do), not the worker's, and only a
// file the CLI's user owns is read.

// DefaultMaxTranscriptBytes bounds the transcript file a worker saves to
// the store, uncompressed. A longer one stays on the worker's disk only.
const DefaultMaxTranscriptBytes = 32 << 20

const (
	// transcriptSaveTimeout bounds one save or restore, store call
	// included, so a slow store holds up neither a turn nor a hand-back
	// for longer.
	transcriptSaveTimeout = 10 * time.Second
	// transcriptFlushWait bounds the wait, after a turn's result, for the
	// turn's last message to reach the file: 2.1.197 writes the file
	// about a second after the result, 2.1.330 before it.
	transcriptFlushWait = 5 * time.Second
	// transcriptFlushPoll is how often the file is looked at meanwhile.
	transcriptFlushPoll = 50 * time.Millisecond
	// transcriptTail is how much of the file's end is searched for the
	// turn's last message.
	transcriptTail = 1 << 20
)

// NoTranscriptMessage is what the thread is told when a session must be
// resumed on a worker that has no transcript for it, and the store has
// none either.
const NoTranscriptMessage = "This session's conversation is not on this worker and was not saved to the store " +
	"(it grew past the size slackgate saves, or its worker was lost before saving it), so Claude cannot resume it here."

// transcriptPlace is where the CLI keeps its files, and whose they are.
type transcriptPlace struct {
	root  string // an os.Root is opened here; nothing outside is touched
	dir   string // the config directory, relative to root ("." or ".claude")
	owner *RunAs // the CLI's user; nil when it runs as the worker's own
}

// placeOf finds the CLI's config directory in the environment it runs with.
func placeOf(env []string, user *RunAs) transcriptPlace {
	if user != nil {
		env = user.env(env)
	}
	if dir := lastValue(env, "CLAUDE_CONFIG_DIR"); filepath.IsAbs(dir) {
		return transcriptPlace{root: filepath.Clean(dir), dir: ".", owner: user}
	}
	return transcriptPlace{root: homeIn(env), dir: ".claude", owner: user}
}

// homeIn is the home of the CLI's user in the environment it runs with
// (RunAs.env sets it for another user).
func homeIn(env []string) string {
	home := lastValue(env, "HOME")
	if !filepath.IsAbs(home) {
		home, _ = os.UserHomeDir()
	}
	return home
}

// lastValue is name's value in env; the last one counts, as for exec.
func lastValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// fileStamp tells whether a file changed since it was last looked at.
type fileStamp struct {
	size int64
	mod  time.Time
}

func stampOf(fi fs.FileInfo) fileStamp { return fileStamp{size: fi.Size(), mod: fi.ModTime()} }

// transcripts saves and restores the transcripts of one worker's sessions.
type transcripts struct {
	st    store.Transcripts
	place transcriptPlace
	max   int64 // < 0: never saved
}

// open opens the root every path is resolved in. With create, a missing
// CLAUDE_CONFIG_DIR is made (as the CLI would); a missing home is not.
func (t *transcripts) open(create bool) (*os.Root, error) {
	root, err := os.OpenRoot(t.place.root)
	if errors.Is(err, fs.ErrNotExist) && create && t.place.dir == "." {
		if err = os.MkdirAll(t.place.root, 0o700); err == nil && t.place.owner != nil {
			err = os.Lchown(t.place.root, int(t.place.owner.UID), int(t.place.owner.GID))
		}
		if err == nil {
			root, err = os.OpenRoot(t.place.root)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("relay: transcripts: %w", err)
	}
	return root, nil
}

func (t *transcripts) projects() string { return path.Join(t.place.dir, "projects") }

// find returns the project directory holding the session's file, and the
// file's path in root; ("", "", nil) when there is none.
func (t *transcripts) find(root *os.Root, sessionID string) (project, file string, err error) {
	dir, err := root.Open(t.projects())
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	defer dir.Close()
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return "", "", err
	}
	var newest time.Time
	for _, e := range entries {
		if !e.IsDir() || !validProject(e.Name()) {
			continue
		}
		p := path.Join(t.projects(), e.Name(), sessionID+".jsonl")
		fi, err := root.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if project == "" || fi.ModTime().After(newest) {
			project, file, newest = e.Name(), p, fi.ModTime()
		}
	}
	return project, file, nil
}

// validProject reports whether name can be a project directory the CLI
// made: one path element of letters, digits and '-'.
func validProject(name string) bool {
	if name == "" || len(name) > 255 {
		return false
	}
	for _, r := range name {
		if r != '-' && (r < '0' || r > '9') && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}

// local opens the session's file for reading, when there is one the CLI's
// user owns.
func (t *transcripts) local(root *os.Root, sessionID string) (project string, f *os.File, fi fs.FileInfo, err error) {
	project, p, err := t.find(root, sessionID)
	if err != nil || project == "" {
		return "", nil, nil, err
	}
	f, err = root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", nil, nil, err
	}
	fi, err = f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", p)
	}
	if err == nil {
		err = t.ownedByCLI(fi, p)
	}
	if err != nil {
		f.Close()
		return "", nil, nil, err
	}
	return project, f, fi, nil
}

// ownedByCLI refuses a file the CLI's user does not own: a hard link to
// someone else's file must not travel to the store.
func (t *transcripts) ownedByCLI(fi fs.FileInfo, p string) error {
	want := uint32(os.Geteuid())
	if t.place.owner != nil {
		want = t.place.owner.UID
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != want {
		return fmt.Errorf("%s belongs to uid %d, not the CLI's user (uid %d)", p, st.Uid, want)
	}
	return nil
}

// save stores the session's file when it changed since `since`, and
// returns the stamp it now has (since when it could not be saved, so the
// next save tries again).
func (t *transcripts) save(ctx context.Context, sessionID string, since fileStamp, log zerolog.Logger) fileStamp {
	if t.max < 0 {
		return since
	}
	var c changed
	err := t.asOwner(func() (err error) {
		c, err = t.readChanged(sessionID, since, log)
		return err
	})
	if err != nil {
		log.Error().Err(err).Msg("transcript not saved")
		return since
	}
	if !c.read {
		return c.stamp
	}
	packed, err := packTranscript(c.project, c.content)
	if err == nil {
		err = t.st.SaveTranscript(ctx, sessionID, packed)
	}
	if err != nil {
		log.Error().Err(err).Int("bytes", len(c.content)).Msg("transcript not saved")
		return since
	}
	log.Debug().Int("bytes", len(c.content)).Int("stored_bytes", len(packed)).Msg("transcript saved")
	return c.stamp
}

// changed is what readChanged found.
type changed struct {
	read    bool   // content holds the file, to be saved
	project string // its project directory
	content []byte
	stamp   fileStamp // the file's now (since when there is none)
}

// readChanged reads the session's file if it changed since `since` and is
// not over the size saved.
func (t *transcripts) readChanged(sessionID string, since fileStamp, log zerolog.Logger) (changed, error) {
	root, err := t.open(false)
	if err != nil {
		return changed{stamp: since}, err
	}
	defer root.Close()
	project, f, fi, err := t.local(root, sessionID)
	if err != nil || f == nil {
		return changed{stamp: since}, err
	}
	defer f.Close()
	stamp := stampOf(fi)
	if stamp == since {
		return changed{stamp: since}, nil
	}
	if fi.Size() > t.max {
		log.Warn().Int64("bytes", fi.Size()).Int64("max_bytes", t.max).
			Msg("transcript over the size saved to the store: the session resumes only on this worker from now on")
		return changed{stamp: stamp}, nil
	}
	content, err := io.ReadAll(io.LimitReader(f, t.max+1))
	if err != nil {
		return changed{stamp: since}, fmt.Errorf("reading it: %w", err)
	}
	return changed{read: true, project: project, content: content, stamp: stamp}, nil
}

// restore makes sure the CLI finds the session's transcript: the store's
// copy is written unless this worker's own file is at least as long (the
// CLI only appends, so the longer one is the later). It returns the stamp
// of the file as the store has it (zero when the worker's own is longer,
// so the next save stores it) and whether a transcript is there at all.
func (t *transcripts) restore(ctx context.Context, sessionID string, log zerolog.Logger) (fileStamp, bool, error) {
	var root *os.Root
	var fi fs.FileInfo // the worker's own file; nil when it has none
	err := t.asOwner(func() (err error) {
		if root, err = t.open(true); err != nil {
			return err
		}
		_, f, info, err := t.local(root, sessionID)
		if f != nil {
			f.Close()
			fi = info
		}
		return err
	})
	if root != nil {
		defer root.Close()
	}
	if err != nil {
		return fileStamp{}, false, err
	}
	packed, err := t.st.LoadTranscript(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return fileStamp{}, fi != nil, nil
	}
	if err != nil {
		return fileStamp{}, fi != nil, err
	}
	limit := t.max
	if limit <= 0 {
		limit = DefaultMaxTranscriptBytes
	}
	project, content, err := unpackTranscript(packed, limit)
	if err != nil {
		return fileStamp{}, fi != nil, err
	}
	if fi != nil && fi.Size() >= int64(len(content)) {
		log.Debug().Int64("bytes", fi.Size()).Msg("transcript on this worker is as long as the store's: kept")
		if fi.Size() == int64(len(content)) {
			return stampOf(fi), true, nil // the store has it: nothing to save until it changes
		}
		return fileStamp{}, true, nil
	}
	var stamp fileStamp
	err = t.asOwner(func() (err error) {
		stamp, err = t.write(root, project, sessionID, content)
		return err
	})
	if err != nil {
		return fileStamp{}, fi != nil, err
	}
	log.Info().Int("bytes", len(content)).Str("project", project).Msg("transcript restored from the store")
	return stamp, true, nil
}

// write puts content in place as the session's file, owned by the CLI's
// user and readable by it alone, replacing any file there in one rename.
func (t *transcripts) write(root *os.Root, project, sessionID string, content []byte) (fileStamp, error) {
	dir := path.Join(t.projects(), project)
	for _, d := range []string{t.place.dir, t.projects(), dir} {
		if err := t.mkdir(root, d); err != nil {
			return fileStamp{}, err
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, "."+sessionID+".slackgate-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fileStamp{}, err
	}
	err = t.chown(f)
	if err == nil {
		_, err = f.Write(content)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, path.Join(dir, sessionID+".jsonl"))
	}
	if err != nil {
		_ = root.Remove(tmp)
		return fileStamp{}, err
	}
	fi, err := root.Lstat(path.Join(dir, sessionID+".jsonl"))
	if err != nil {
		return fileStamp{}, err
	}
	return stampOf(fi), nil
}

// mkdir creates d (0700, the CLI user's) unless it exists as a directory.
func (t *transcripts) mkdir(root *os.Root, d string) error {
	if d == "." {
		return nil
	}
	err := root.Mkdir(d, 0o700)
	if errors.Is(err, fs.ErrExist) {
		fi, err := root.Lstat(d)
		if err == nil && !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", d)
		}
		return err
	}
	if err != nil {
		return err
	}
	if t.place.owner != nil {
		return root.Lchown(d, int(t.place.owner.UID), int(t.place.owner.GID))
	}
	return nil
}

func (t *transcripts) chown(f *os.File) error {
	if t.place.owner == nil {
		return nil
	}
	return f.Chown(int(t.place.owner.UID), int(t.place.owner.GID))
}

// flushed waits, up to transcriptFlushWait, until the session's file holds
// the message with uuid (the turn's last), so what is saved has the turn
// whole. It gives up quietly: a save then takes what is there.
func (t *transcripts) flushed(ctx context.Context, sessionID, uuid string) {
	if uuid == "" || t.max < 0 {
		return
	}
	deadline := time.NewTimer(transcriptFlushWait)
	defer deadline.Stop()
	tick := time.NewTicker(transcriptFlushPoll)
	defer tick.Stop()
	for !t.holds(sessionID, uuid) {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
	}
}

// holds reports whether the end of the session's file mentions uuid.
func (t *transcripts) holds(sessionID, uuid string) bool {
	var tail []byte
	err := t.asOwner(func() error {
		root, err := t.open(false)
		if err != nil {
			return err
		}
		defer root.Close()
		_, f, fi, err := t.local(root, sessionID)
		if err != nil || f == nil {
			return err
		}
		defer f.Close()
		off := max(fi.Size()-transcriptTail, 0)
		tail, err = io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
		return err
	})
	return err == nil && bytes.Contains(tail, []byte(uuid))
}

// asOwner runs fn with the CLI user's rights on files (RunAs.do), or as the
// worker when the CLI runs as the worker's own user.
func (t *transcripts) asOwner(fn func() error) error {
	if t.place.owner == nil {
		return fn()
	}
	return t.place.owner.do(fn)
}

// packTranscript gzips a transcript file, naming its project directory in
// the gzip header.
func packTranscript(project string, content []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	zw.Name = project
	if _, err := zw.Write(content); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unpackTranscript undoes packTranscript, refusing a project name that is
// not one directory the CLI could have made and content over limit bytes
// (the store is not trusted to hand back only what a worker saved).
func unpackTranscript(packed []byte, limit int64) (project string, content []byte, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		return "", nil, fmt.Errorf("relay: stored transcript: %w", err)
	}
	if !validProject(zr.Name) {
		return "", nil, fmt.Errorf("relay: stored transcript names project %q, not one directory of letters, digits and '-'", zr.Name)
	}
	content, err = io.ReadAll(io.LimitReader(zr, limit+1))
	if err == nil {
		err = zr.Close()
	}
	if err != nil {
		return "", nil, fmt.Errorf("relay: stored transcript: %w", err)
	}
	if int64(len(content)) > limit {
		return "", nil, fmt.Errorf("relay: stored transcript is over %d bytes uncompressed", limit)
	}
	return zr.Name, content, nil
}

// transcriptSaver saves one process's session transcript: in the
// background when a turn ends (one save at a time; a turn ending during a
// save asks for one more), and a last time when the process has exited.
// Only the session loop calls it.
type transcriptSaver struct {
	transcripts *transcripts
	id          string
	log         zerolog.Logger
	ctx         context.Context // outlives shutdown; each save is bounded on its own
	// exited ends a background save's wait for the file: once the
	// process is gone, final saves whatever it left.
	exited     context.Context
	markExited context.CancelFunc

	mu        sync.Mutex
	busy      bool   // a background save runs
	again     bool   // a turn ended while it ran
	againUUID string // that turn's last message
	wg        sync.WaitGroup

	last fileStamp // the file as last saved (or restored); only the running save touches it
}

func newTranscriptSaver(ctx context.Context, t *transcripts, sessionID string, restored fileStamp, log zerolog.Logger) *transcriptSaver {
	s := &transcriptSaver{transcripts: t, id: sessionID, log: log, ctx: context.WithoutCancel(ctx), last: restored}
	s.exited, s.markExited = context.WithCancel(s.ctx)
	return s
}

// afterTurn saves the transcript once the turn whose last message is uuid
// is in the file, without holding up the caller.
func (s *transcriptSaver) afterTurn(uuid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		s.again, s.againUUID = true, uuid
		return
	}
	s.busy = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			s.saveOnce(uuid)
			s.mu.Lock()
			if !s.again || s.exited.Err() != nil {
				s.busy = false
				s.mu.Unlock()
				return
			}
			s.again, uuid = false, s.againUUID
			s.mu.Unlock()
		}
	}()
}

// final, once the process has exited, cuts short a background save's wait
// for the file, waits for its store call, and saves what the process left
// if it changed: at most two store calls, each bounded, hold up the
// session's hand-back.
func (s *transcriptSaver) final() {
	s.markExited()
	s.wg.Wait()
	s.saveOnce("")
}

func (s *transcriptSaver) saveOnce(uuid string) {
	wctx, cancel := context.WithTimeout(s.exited, transcriptFlushWait)
	s.transcripts.flushed(wctx, s.id, uuid)
	cancel()
	ctx, cancel := context.WithTimeout(s.ctx, transcriptSaveTimeout)
	defer cancel()
	s.last = s.transcripts.save(ctx, s.id, s.last, s.log)
}
