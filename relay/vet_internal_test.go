package relay

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// What only a raw write into the store (not the Store interface) can
// produce: a session record under another session's key, an input in
// another session's inbox. Both are refused even with a good signature.
func TestARecordFiledUnderAnotherSessionIsRefused(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	cfg := Config{VerifyKey: key.Public().(ed25519.PublicKey), AllowedDirs: []string{"/srv/repo"}, WorkerID: "w", Env: []string{}}
	if err := cfg.normalize(); err != nil {
		t.Fatal(err)
	}
	w := &Worker{cfg: cfg}
	const a, b = "2f0c6a8e-8d3b-4d55-9a53-0c1f4b8e6a11", "3f0c6a8e-8d3b-4d55-9a53-0c1f4b8e6a11"
	s := store.Session{ID: b, WorkDir: "/srv/repo/", CreatedAt: time.Now()}
	if err := store.SignSession(key, &s); err != nil {
		t.Fatal(err)
	}
	if r := w.vetSession(b, s); r != nil {
		t.Fatalf("a signed session in an allowed directory (written with a trailing slash) was refused: %v", r.err)
	}
	if r := w.vetSession(a, s); r == nil || r.why != WhyBadID {
		t.Errorf("b's record claimed as a: %+v, want refused as %q", r, WhyBadID)
	}
	in := store.Input{ID: "in-1", SessionID: b, Text: "hi", At: time.Now()}
	if err := store.SignInput(key, &in); err != nil {
		t.Fatal(err)
	}
	if r := w.vetInput(b, in, nil); r != nil {
		t.Fatalf("a signed input in its own session's queue was refused: %v", r.err)
	}
	if r := w.vetInput(a, in, nil); r == nil || r.why != WhyOtherSession {
		t.Errorf("b's input in a's queue: %+v, want refused as %q", r, WhyOtherSession)
	}
	if r := w.vetInput(b, in, map[string]bool{in.ID: true}); r == nil || r.why != WhyReplay {
		t.Errorf("an input delivered already: %+v, want refused as %q", r, WhyReplay)
	}
}

func TestAWorkerNeedsTheDirectoriesItMayRunIn(t *testing.T) {
	pub := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	for name, dirs := range map[string][]string{"none": nil, "an empty one": {"/srv/repo", ""}} {
		cfg := Config{VerifyKey: pub, AllowedDirs: dirs, WorkerID: "w"}
		if err := cfg.normalize(); err == nil {
			t.Errorf("AllowedDirs %s: the configuration was accepted", name)
		}
	}
}
