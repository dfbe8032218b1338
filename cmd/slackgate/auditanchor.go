package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slackgate/slackgate/bot"
	"github.com/slackgate/slackgate/bot/auditsink"
	"github.com/slackgate/slackgate/store"
)

// What `audit verify` holds the store to beyond the store itself, so a
// store writer who deleted the log and let a new one grow is caught: the
// checkpoints and lines in AUDIT_CHANNEL, the anchor a bot keeps in
// DATA_DIR, and hashes the operator kept (-expect).

// auditKeyHint says where the keys of `audit verify` and `audit reset`
// come from.
const auditKeyHint = "set DECISION_VERIFY_KEY (or DECISION_SIGNING_KEY), or point DATA_DIR at the directory `slackgate run` keeps its key in"

// keptSigningKey is the key `slackgate run` keeps in DATA_DIR (keepKeys);
// nil when there is none.
func keptSigningKey(cfg Config) (ed25519.PrivateKey, error) {
	path := filepath.Join(cfg.DataDir, keptKeyFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the key kept in DATA_DIR: %w", err)
	}
	k, err := parseSigningKey(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// auditVerifyKey is the key checkpoints are verified with: the verify
// key, the public half of the signing key, or of the key `slackgate run`
// keeps in DATA_DIR.
func auditVerifyKey(cfg Config) (ed25519.PublicKey, error) {
	if cfg.DecisionVerifyKey != "" {
		return parseVerifyKey(cfg.DecisionVerifyKey)
	}
	k, err := auditSigningKey(cfg)
	if err != nil {
		return nil, err
	}
	return k.Public().(ed25519.PublicKey), nil
}

// auditSigningKey is the key the bots seal with: DECISION_SIGNING_KEY, or
// the one `slackgate run` keeps in DATA_DIR.
func auditSigningKey(cfg Config) (ed25519.PrivateKey, error) {
	if cfg.DecisionSigningKey != "" {
		return parseSigningKey(cfg.DecisionSigningKey)
	}
	k, err := keptSigningKey(cfg)
	if err == nil && k == nil {
		err = fmt.Errorf("the bots seal the audit log with DECISION_SIGNING_KEY, and none is set or kept in DATA_DIR=%s: %s", cfg.DataDir, auditKeyHint)
	}
	return k, err
}

// expectFlag is -expect SEQ:HASH, repeatable.
type expectFlag []store.AuditLink

func (f *expectFlag) String() string { return fmt.Sprint(*f) }

func (f *expectFlag) Set(v string) error {
	n, h, ok := strings.Cut(v, ":")
	seq, err := strconv.ParseUint(n, 10, 64)
	if !ok || err != nil || seq == 0 || len(h) < 16 || len(h) > 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return fmt.Errorf("%q: want SEQ:HASH, the hash (16 to 64 lowercase hex digits) of the entry at SEQ, as a checkpoint line shows it", v)
	}
	*f = append(*f, store.AuditLink{Seq: seq, Hash: h})
	return nil
}

// outside is what is kept beyond the store: hold gives a verifier all of
// it and returns a break found in it alone; checks says what it is, for
// the report, and notes what else the report should say.
type outside struct {
	hold   func(v *store.AuditVerifier) *store.AuditBreak
	checks []string
	notes  []string
}

// anchorsOutside reads what the installation keeps outside the store: the
// bot's anchor in DATA_DIR and the audit channel's lines; what was signed
// or posted before reset (the store's newest reset, if any) is what the
// reset acknowledged, and not asked for.
func (p program) anchorsOutside(ctx context.Context, cfg Config, reset *store.AuditCheckpoint) (outside, error) {
	var holds []func(v *store.AuditVerifier) *store.AuditBreak
	o := outside{hold: func(v *store.AuditVerifier) *store.AuditBreak {
		var brk *store.AuditBreak
		for _, h := range holds {
			if b := h(v); brk == nil {
				brk = b
			}
		}
		return brk
	}}
	var since time.Time
	if reset != nil {
		since = reset.At
	}
	path := filepath.Join(cfg.DataDir, auditAnchorName)
	anchor, err := auditsink.ReadAnchor(path)
	if err != nil {
		return o, err
	}
	if anchor.Checkpoint.Seq > 0 && !anchor.Checkpoint.At.Before(since) {
		holds = append(holds, func(v *store.AuditVerifier) *store.AuditBreak {
			const src = "the bot's anchor in DATA_DIR"
			v.Published(anchor.Checkpoint, src)
			if anchor.Head.Seq > 0 {
				v.Seen(anchor.Head.Seq, anchor.Head.Hash, src)
			}
			return nil
		})
		o.checks = append(o.checks, fmt.Sprintf("the bot's anchor in %s (checkpoint at seq %d, head at seq %d)", path, anchor.Checkpoint.Seq, anchor.Head.Seq))
	}
	if cfg.AuditChannel == "" {
		return o, nil
	}
	if cfg.SlackBotToken == "" {
		return o, errors.New("AUDIT_CHANNEL is set without SLACK_BOT_TOKEN to read it with")
	}
	progress := func(n int) {
		if n%5000 == 0 {
			fmt.Fprintf(p.stderr, "audit verify: %d messages of the audit channel read\n", n)
		}
	}
	lines, err := auditsink.ReadChannel(ctx, bot.NewSlackClient(cfg.SlackBotToken, cfg.SlackAPIURL), cfg.AuditChannel, progress)
	if err != nil {
		return o, err
	}
	holds = append(holds, func(v *store.AuditVerifier) *store.AuditBreak { return heldToChannel(v, lines, since) })
	o.checks = append(o.checks, channelChecks(lines))
	return o, nil
}

// heldToChannel gives v what the audit channel holds of the current epoch
// (from its newest reset on): its checkpoints, and its entries' lines
// posted after the reset and since. It returns a break in the channel
// itself: its checkpoints do not follow each other, or two lines show
// other entries at one seq.
func heldToChannel(v *store.AuditVerifier, lines []auditsink.ChannelLine, since time.Time) *store.AuditBreak {
	const src = "the audit channel"
	var cps []store.AuditCheckpoint
	var at []int // the index in lines of each of cps
	for i, l := range lines {
		if l.Checkpoint != nil {
			cps, at = append(cps, *l.Checkpoint), append(at, i)
		}
	}
	epoch, brk := store.PublishedEpoch(cps, src)
	if brk != nil {
		return brk
	}
	from := 0
	if len(cps) > 0 && cps[epoch].Reset {
		from = at[epoch]
	}
	for _, cp := range cps[epoch:] {
		v.Published(cp, src)
	}
	shown := map[uint64]string{}
	for _, l := range lines[from:] {
		if l.Checkpoint != nil || tsTime(l.TS).Before(since) {
			continue
		}
		if h, ok := shown[l.Seq]; ok && h != l.HashPrefix {
			return &store.AuditBreak{Kind: store.AuditRewritten, Seq: l.Seq, Source: src,
				Reason: fmt.Sprintf("%s shows two entries at seq %d (hashes %s… and %s…): the chain was rebuilt under it", src, l.Seq, h, l.HashPrefix)}
		}
		shown[l.Seq] = l.HashPrefix
		v.Seen(l.Seq, l.HashPrefix, src)
	}
	return nil
}

// tsTime is the time of a Slack ts ("1763596800.000100").
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, _ := strconv.ParseInt(sec, 10, 64)
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000)
}

func channelChecks(lines []auditsink.ChannelLine) string {
	cps := 0
	for _, l := range lines {
		if l.Checkpoint != nil {
			cps++
		}
	}
	return fmt.Sprintf("the audit channel (%d checkpoint lines, %d entry lines)", cps, len(lines)-cps)
}

// printOutside says what beyond the store was checked, or that nothing
// was, and its notes.
func printOutside(w io.Writer, o outside) {
	for _, n := range o.notes {
		fmt.Fprintln(w, "note: "+n)
	}
	if len(o.checks) == 0 {
		fmt.Fprintln(w, "note: nothing outside the store was checked: a store writer could have replaced the whole log. "+
			"Set AUDIT_CHANNEL, keep DATA_DIR, or pass -expect SEQ:HASH from a checkpoint you kept (deploy/README.md, \"Audit anchors\")")
		return
	}
	fmt.Fprintln(w, "held to "+strings.Join(o.checks, " and "))
}
