package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"
	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/redisstore"
)

// The tests here are the attacks of issue 26 on a running installation:
// someone with the store's credentials and no key deletes the audit log
// and lets a new one grow, cuts its newest entries, or replaces a
// checkpoint with one of their own; and a bot restarts between the wipe
// and the rebuild. Each is caught by the running bot (it stops sealing
// and says so on /readyz and in the audit channel) and by `slackgate
// audit verify` run with the installation's own settings and no flag.

// anchoredApp runs `slackgate run` on be with AUDIT_CHANNEL, as an
// operator sets it. On Redis the bots get keygen's pair (a key made in
// memory would seal nothing) and no DATA_DIR (the default ./data does not
// exist here), as in a container: the bot remembers in memory, and the
// audit channel is the anchor verify has. On bbolt `run` keeps its key in
// DATA_DIR, as `make run` does; dataDir, when set, is a DATA_DIR prepared
// before the start.
func anchoredApp(t *testing.T, be backend, dataDir string) *app {
	t.Helper()
	// The channels exist before the bot starts: it may seal and post at
	// its first look.
	channels := func(f *fakeslack.Fake) {
		f.AddChannel(auditChannel, "audit")
		f.AddChannel("C1", "one") // where record's sessions are
		f.AddChannel("C2", "two")
	}
	a := startApp(t, options{backend: be, approvers: lee, slackOpts: []fakeslack.Option{channels}, configure: func(c *Config) {
		c.AuditChannel = auditChannel
		if be != boltBackend {
			c.DecisionSigningKey, c.DecisionVerifyKey = testKeys.sign, testKeys.verify
		}
		if dataDir != "" {
			c.DataDir = dataDir
		}
	}})
	return a
}

// sealedAt waits until the store's newest checkpoint seals seq or more,
// and its line is in the audit channel; it returns the checkpoint.
func sealedAt(t *testing.T, a *app, st store.Store, seq uint64) store.AuditCheckpoint {
	t.Helper()
	var cp store.AuditCheckpoint
	poll(a, fmt.Sprintf("a checkpoint at seq %d or later", seq), func() bool {
		var err error
		cp, err = st.LastAuditCheckpoint(context.Background())
		return err == nil && cp.Seq >= seq
	})
	marker := blocks.AuditCheckpointMarker(cp)
	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Channel == auditChannel && hasBlock(m, marker)
	}); err != nil {
		t.Fatalf("no line in the audit channel for the checkpoint at seq %d: %v", cp.Seq, err)
	}
	return cp
}

// refuses waits until the running bot says it stopped sealing, on
// /readyz and in the audit channel, for a reason that says want.
func refuses(t *testing.T, a *app, want string) {
	t.Helper()
	poll(a, "/readyz notes the broken audit chain", func() bool {
		code, body := get(t, a.ops+"/readyz")
		return code == http.StatusOK && strings.Contains(body, `"audit_chain"`)
	})
	alarm, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Channel == auditChannel && strings.Contains(m.Text, "stopped sealing the audit log")
	})
	if err != nil {
		t.Fatalf("no alarm in the audit channel: %v", err)
	}
	if !strings.Contains(alarm.Text, want) {
		t.Errorf("alarm %q; want it to say %q", alarm.Text, want)
	}
}

// verifyAsInstalled runs `slackgate audit verify` with the
// installation's settings and no flag.
func verifyAsInstalled(t *testing.T, a *app) (string, error) {
	t.Helper()
	return runProgram(t, a.processEnv(nil), "audit", "verify")
}

// redisAudit is the app's Redis client and its audit keys (keys.go).
func redisAudit(t *testing.T, a *app) (c redis.UniversalClient, stream, head, cps string) {
	t.Helper()
	p := "{" + a.cfg.RedisKeyPrefix + "}:"
	return a.redisStore().(*redisstore.Store).Client(), p + "audit", p + "audithead", p + "auditcps"
}

// TestE2EAuditAnchorsCatchAWipeAndRebuild: with the bot running, a store
// writer deletes the audit log, its head and checkpoints, and the log
// grows anew. The bot stops sealing and says why; `audit verify` fails on
// it. Once an operator signed a reset, the bot seals on and verify
// passes, reporting the reset.
func TestE2EAuditAnchorsCatchAWipeAndRebuild(t *testing.T) {
	t.Parallel()
	a := anchoredApp(t, redisBackend, "")
	st := a.redisStore()
	ctx := context.Background()
	record(t, st, time.Now(), 0, 3)
	sealed := sealedAt(t, a, st, 6)
	if out, err := verifyAsInstalled(t, a); err != nil || !strings.Contains(out, "held to the audit channel") {
		t.Fatalf("audit verify of an intact log: %v\n%s", err, out)
	}

	c, stream, head, cps := redisAudit(t, a)
	must(t, c.Del(ctx, stream, head, cps).Err())
	record(t, st, time.Now(), 10, 4)
	refuses(t, a, fmt.Sprintf("the store holds no audit checkpoint; this bot sealed or checked one at seq %d", sealed.Seq))
	if _, err := st.LastAuditCheckpoint(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the rebuilt log was sealed: %v", err)
	}
	out, err := verifyAsInstalled(t, a)
	if err == nil {
		t.Fatalf("audit verify passed a rebuilt log:\n%s", out)
	}
	requireAll(t, out+err.Error(), "BROKEN", "rewritten", "the audit channel shows it")

	out, err = runProgram(t, a.processEnv(nil), "audit", "reset", "-reason", "Redis wiped on 11-28; lee checked the backups", "-by", "lee")
	if err != nil {
		t.Fatalf("audit reset: %v\n%s", err, out)
	}
	requireAll(t, out, fmt.Sprintf("superseding the checkpoint at seq %d", sealed.Seq), "Keep this line: cp2 ")
	poll(a, "the bot seals again after the reset", func() bool {
		_, body := get(t, a.ops+"/readyz")
		return !strings.Contains(body, "audit_chain")
	})
	reset, err := st.LastAuditCheckpoint(ctx)
	if err != nil || !reset.Reset {
		t.Fatalf("newest checkpoint after the reset: %+v, %v", reset, err)
	}
	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Channel == auditChannel && hasBlock(m, blocks.AuditCheckpointMarker(reset))
	}); err != nil {
		t.Errorf("the reset has no line in the audit channel: %v", err)
	}
	record(t, st, time.Now(), 20, 1)
	a.stop() // seals what is left
	last, err := st.LastAuditCheckpoint(ctx)
	if err != nil || !last.Follows(reset) {
		t.Errorf("the checkpoint after the reset = %+v (%v), want one naming the reset", last, err)
	}
	out, err = verifyAsInstalled(t, a)
	if err != nil {
		t.Fatalf("audit verify after the reset: %v\n%s", err, out)
	}
	requireAll(t, out, fmt.Sprintf("an operator reset the chain at seq %d", reset.Seq), "every entry is sealed")
}

// TestE2EAuditAnchorsCatchACutAndAForgery: with the bot running, a store
// writer cuts the newest entries and the checkpoint that sealed them, or
// replaces the newest checkpoint with one signed by another key: the bot
// stops sealing, and `audit verify` fails.
func TestE2EAuditAnchorsCatchACutAndAForgery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, a *app, sealed store.AuditCheckpoint)
		bot    string // what the bot's alarm says
		verify string // what audit verify says
	}{
		{"NewestEntriesCut", func(t *testing.T, a *app, sealed store.AuditCheckpoint) {
			ctx := context.Background()
			c, stream, head, cps := redisAudit(t, a)
			es, err := c.XRange(ctx, stream, "-", "+").Result()
			must(t, err)
			keep := es[3] // seq 4
			for _, e := range es[4:] {
				must(t, c.XDel(ctx, stream, e.ID).Err())
			}
			must(t, c.HSet(ctx, head, "n", "4", "h", keep.Values["h"], "id", keep.ID).Err())
			must(t, c.ZRemRangeByScore(ctx, cps, "5", "+inf").Err())
		}, "this bot sealed or checked one at seq", "checkpoint at seq"},
		{"CheckpointReplaced", func(t *testing.T, a *app, sealed store.AuditCheckpoint) {
			ctx := context.Background()
			c, _, _, cps := redisAudit(t, a)
			must(t, c.ZRemRangeByScore(ctx, cps, "0", "+inf").Err())
			forged := sealed
			key, err := parseSigningKey(otherKeys.sign)
			must(t, err)
			must(t, store.SignAuditCheckpoint(key, &forged))
			must(t, a.redisStore().PutAuditCheckpoint(ctx, forged, 0))
		}, "is forged", "is forged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := anchoredApp(t, redisBackend, "")
			st := a.redisStore()
			record(t, st, time.Now(), 0, 3)
			sealed := sealedAt(t, a, st, 6)
			tc.tamper(t, a, sealed)
			refuses(t, a, tc.bot)
			out, err := verifyAsInstalled(t, a)
			if err == nil {
				t.Fatalf("audit verify passed a tampered log:\n%s", out)
			}
			requireAll(t, out, "BROKEN", tc.verify)
		})
	}
}

// TestE2EAuditAnchorsOutliveARestart: `slackgate run` on the embedded
// store seals a log and stops; while it is down, a writer of its file
// deletes the log and writes a new one; the restarted bot refuses to seal
// it (its anchor in DATA_DIR), and `audit verify`, with nothing but the
// installation's settings, fails on it. Before the tampering, verify
// passes with the key `run` keeps in DATA_DIR.
func TestE2EAuditAnchorsOutliveARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var st store.Store
	st, err := boltstore.Open(filepath.Join(dir, "slackgate.db"))
	must(t, err)
	record(t, st, trailDay, 0, 3)
	must(t, st.Close())
	a := anchoredApp(t, boltBackend, dir)
	var line store.AuditCheckpoint
	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		for _, b := range m.Blocks {
			if sec, ok := b.(*slack.SectionBlock); ok && m.Channel == auditChannel && sec.Text != nil {
				if cp, ok := blocks.ParseAuditCheckpointLine(b.ID(), sec.Text.Text); ok {
					line = cp
					return true
				}
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no checkpoint line in the audit channel: %v", err)
	}
	a.stop()
	st = openAppStore(t, a)
	sealed, err := st.LastAuditCheckpoint(context.Background())
	if err != nil || sealed.Seq != 6 || !sealed.Same(line) {
		t.Fatalf("sealed %+v, %v; want the 6 entries sealed, as the channel's line %+v", sealed, err, line)
	}
	must(t, st.Close())
	if out, err := verifyAsInstalled(t, a); err != nil || !strings.Contains(out, "every entry is sealed") {
		t.Fatalf("audit verify with the key `run` kept: %v\n%s", err, out)
	}

	db, err := bolt.Open(filepath.Join(dir, "slackgate.db"), 0o600, nil)
	must(t, err)
	must(t, db.Update(func(tx *bolt.Tx) error {
		for _, b := range []string{"audit", "auditchain", "auditcps"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
			if _, err := tx.CreateBucket([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	}))
	must(t, db.Close())
	st, err = boltstore.Open(filepath.Join(dir, "slackgate.db"))
	must(t, err)
	record(t, st, trailDay.Add(time.Hour), 10, 4)
	must(t, st.Close())

	a.slack.DropConnections()
	a.run("run", func() {})
	a.waitServing(socketMode)
	refuses(t, a, fmt.Sprintf("this bot sealed or checked one at seq %d", sealed.Seq))
	a.stop()
	out, err := verifyAsInstalled(t, a)
	if err == nil {
		t.Fatalf("audit verify passed a log rebuilt while the bot was down:\n%s", out)
	}
	requireAll(t, out, "BROKEN", "seq 6", "audit channel")
	// Without the audit channel, the bot's anchor in DATA_DIR shows it.
	out, err = runProgram(t, a.processEnv(func(c *Config) { c.AuditChannel = "" }), "audit", "verify")
	if err == nil {
		t.Fatalf("audit verify without the channel passed a rebuilt log:\n%s", out)
	}
	requireAll(t, out, "BROKEN", "seq 6", "the bot's anchor in DATA_DIR")
	st = openAppStore(t, a)
	if _, err := st.LastAuditCheckpoint(context.Background()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the restarted bot sealed the rebuilt log: %v", err)
	}
}

// hasBlock reports whether m has a block with block_id id.
func hasBlock(m fakeslack.Message, id string) bool {
	for _, b := range m.Blocks {
		if b.ID() == id {
			return true
		}
	}
	return false
}
