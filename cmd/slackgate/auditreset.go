package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slackgate/slackgate/bot"
	"github.com/slackgate/slackgate/bot/auditsink"
	"github.com/slackgate/slackgate/store"
)

// maxResetReason bounds -reason: it goes into the log, the audit channel
// and every export.
const maxResetReason = 500

// auditReset is the operator's answer to a bot that stopped sealing the
// audit log: once `audit verify` said what changed and someone looked, it
// records who acknowledged it and why as an entry of the log, then signs
// a reset checkpoint over the chain as it is now, with the decision
// signing key, naming the newest checkpoint the installation knew of
// (the store's, the bot's anchor in DATA_DIR, the audit channel's). The
// reset replaces the store's checkpoints; it vouches for the chain up to
// it when that links from its start, and is marked unlinked otherwise.
// The bots take the reset and seal on from it; `audit verify` reports it.
// A store writer cannot make one: it takes the key.
//
//	slackgate audit reset -reason WHY [-by NAME]
func (p program) auditReset(ctx context.Context, args []string, cfg Config) error {
	fs := flag.NewFlagSet("audit reset", flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	reason := fs.String("reason", "", "why the break is acknowledged (required): what was found, who looked")
	by := fs.String("by", operatorName(), "who acknowledges it")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("audit reset: %w", err)
	}
	*reason = strings.TrimSpace(*reason)
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("audit reset: unexpected argument %q", fs.Arg(0))
	case *reason == "":
		return errors.New("audit reset: -reason is required: say what `slackgate audit verify` found and who looked")
	case utf8.RuneCountInString(*reason) > maxResetReason:
		return fmt.Errorf("audit reset: -reason of %d characters; at most %d", utf8.RuneCountInString(*reason), maxResetReason)
	case strings.TrimSpace(*by) == "":
		return errors.New("audit reset: -by is required: who acknowledges the break")
	}
	key, err := auditSigningKey(cfg)
	if err != nil {
		return fmt.Errorf("audit reset: %w", err)
	}
	st, err := openExistingStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	prev, where, err := p.newestKnown(ctx, cfg, st, key.Public().(ed25519.PublicKey))
	if err != nil {
		return fmt.Errorf("audit reset: %w", err)
	}
	head, err := st.AuditHead(ctx)
	if err != nil {
		return fmt.Errorf("audit reset: %w", err)
	}
	what := fmt.Sprintf("%s (the chain was at seq %d", *reason, head.Seq)
	if prev.Seq > 0 {
		what += fmt.Sprintf("; this supersedes the checkpoint at seq %d signed %s, from %s", prev.Seq, prev.At.UTC().Format(time.RFC3339), where)
	}
	err = st.AppendAudit(ctx, store.AuditEntry{Action: store.AuditChainReset, By: "operator:" + *by, ByName: *by, Message: what + ")", At: time.Now()})
	if err != nil {
		return fmt.Errorf("audit reset: record it: %w", err)
	}
	r, err := putReset(ctx, st, key, prev)
	if err != nil {
		return fmt.Errorf("audit reset: recorded, not signed: %w", err)
	}
	holds := "the chain up to it links from its start, and the reset vouches for that"
	if r.Unlinked {
		holds = "the chain before it does not hold: verify checks the log from the reset on"
	}
	fmt.Fprintf(p.stdout, "reset the audit chain at seq %d, superseding the checkpoint at seq %d; %s; the bots seal on from it.\nKeep this line: %s\n",
		r.Seq, r.PrevSeq, holds, store.AuditCheckpointText(r))
	return nil
}

// linksUp reports whether the store's log links up from its start, or
// from the checkpoint retention kept, with its kept checkpoints.
func linksUp(ctx context.Context, st store.Store, pub ed25519.PublicKey) (bool, error) {
	cps, err := st.AuditCheckpoints(ctx, 0)
	if err != nil {
		return false, err
	}
	v := store.NewAuditVerifier(pub, cps)
	if err := walkAudit(ctx, st, "", func(e store.AuditEntry) (bool, error) { return v.Entry(e), nil }); err != nil {
		return false, err
	}
	return v.Finish().Break == nil, nil
}

// putReset signs and stores a reset of the chain's head after prev,
// trying again when a bot's checkpoint came first.
func putReset(ctx context.Context, st store.Store, key ed25519.PrivateKey, prev store.AuditCheckpoint) (store.AuditCheckpoint, error) {
	for range 3 {
		head, err := st.AuditHead(ctx)
		if err != nil {
			return store.AuditCheckpoint{}, err
		}
		var newest uint64
		switch last, err := st.LastAuditCheckpoint(ctx); {
		case err == nil:
			newest = last.Seq
		case !errors.Is(err, store.ErrNotFound):
			return store.AuditCheckpoint{}, err
		}
		linked, err := linksUp(ctx, st, key.Public().(ed25519.PublicKey))
		if err != nil {
			return store.AuditCheckpoint{}, err
		}
		r := store.NextAuditCheckpoint(prev, head, time.Now())
		r.Reset, r.Unlinked = true, !linked
		if err := store.SignAuditCheckpoint(key, &r); err != nil {
			return r, err
		}
		if err := st.PutAuditCheckpoint(ctx, r, newest); !errors.Is(err, store.ErrExists) {
			return r, err
		}
	}
	return store.AuditCheckpoint{}, errors.New("checkpoints kept coming: try again")
}

// newestKnown is the newest checkpoint, by when it was signed, that the
// store, the bot's anchor in DATA_DIR or the audit channel holds and that
// verifies under pub, and where it was found; zero when there is none.
func (p program) newestKnown(ctx context.Context, cfg Config, st store.Store, pub ed25519.PublicKey) (store.AuditCheckpoint, string, error) {
	var best store.AuditCheckpoint
	var where string
	take := func(cp store.AuditCheckpoint, from string) {
		if cp.Seq > 0 && store.VerifyAuditCheckpoint(pub, cp) == nil && (best.Seq == 0 || cp.At.After(best.At)) {
			best, where = cp, from
		}
	}
	switch last, err := st.LastAuditCheckpoint(ctx); {
	case err == nil:
		take(last, "the store")
	case !errors.Is(err, store.ErrNotFound):
		return best, "", err
	}
	anchor, err := auditsink.ReadAnchor(filepath.Join(cfg.DataDir, auditAnchorName))
	if err != nil {
		return best, "", err
	}
	take(anchor.Checkpoint, "the bot's anchor in DATA_DIR")
	if cfg.AuditChannel != "" && cfg.SlackBotToken != "" {
		lines, err := auditsink.ReadChannel(ctx, bot.NewSlackClient(cfg.SlackBotToken, cfg.SlackAPIURL), cfg.AuditChannel, nil)
		if err != nil {
			return best, "", err
		}
		for _, l := range lines {
			if l.Checkpoint != nil {
				take(*l.Checkpoint, "the audit channel")
			}
		}
	}
	return best, where, nil
}

// operatorName names who runs the command, for -by's default.
func operatorName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}
