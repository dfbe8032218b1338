package main

import (
	"context"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/slackgate/slackgate/store"
)

// auditFilter selects the entries an export shows in full.
type auditFilter struct {
	since, until                 time.Time
	channel, user, tool, outcome string
}

func (f auditFilter) match(e store.AuditEntry) bool {
	return (f.since.IsZero() || !e.At.Before(f.since)) && (f.until.IsZero() || e.At.Before(f.until)) &&
		(f.channel == "" || e.Channel == f.channel) && (f.user == "" || e.By == f.user) &&
		(f.tool == "" || e.Tool == f.tool) && (f.outcome == "" || string(e.Outcome) == f.outcome)
}

// progressEvery is how many entries a long export reads between two lines
// on stderr saying how far it is.
const progressEvery = 10_000

// auditExport streams the audit entries that match, oldest first. As
// jsonl it is verifiable on its own (`audit verify -file`): the entries
// left out are kept as their link and digest ("omitted"), from the
// checkpoint before the first entry shown to the checkpoint after the
// last one, with those checkpoints, so the chain and its signatures check
// end to end and nothing inside the period can have been dropped unseen.
// What an omitted entry said stays hidden, so whether it matched the
// filters only an export without them (or the store) shows. As csv it is
// one row per entry shown, for a spreadsheet.
//
//	slackgate audit export [-since T] [-until T] [-channel C] [-user U] [-tool NAME] [-outcome O] [-format jsonl|csv]
func (p program) auditExport(ctx context.Context, args []string, cfg Config) error {
	f, format, slackURL, err := p.exportFlags(args)
	if err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	st, err := openExistingStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	cps, err := st.AuditCheckpoints(ctx, 0)
	if err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	var out exporter = newCSVExport(p.stdout, slackURL)
	if format == "jsonl" {
		out = newJSONLExport(p.stdout, cps)
	}
	read, shown := 0, 0
	err = walkAudit(ctx, st, "", func(e store.AuditEntry) (bool, error) {
		read++
		match := f.match(e)
		if match {
			shown++
		}
		if read%progressEvery == 0 {
			fmt.Fprintf(p.stderr, "audit export: %d entries read, %d exported\n", read, shown)
		}
		return true, out.add(e, match)
	})
	if err == nil {
		err = out.finish()
	}
	if err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	return nil
}

// exportFlags parses the export's flags.
func (p program) exportFlags(args []string) (f auditFilter, format, slackURL string, err error) {
	fs := flag.NewFlagSet("audit export", flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	since := fs.String("since", "", "entries at or after this time (RFC 3339, or a date: 2026-11-01 is its midnight UTC)")
	until := fs.String("until", "", "entries before this time (same forms)")
	fs.StringVar(&f.channel, "channel", "", "entries of sessions in this channel (id, C…)")
	fs.StringVar(&f.user, "user", "", "entries decided by this Slack user (id, U…)")
	fs.StringVar(&f.tool, "tool", "", "entries about this tool (Bash, Write, mcp__server__tool, …)")
	fs.StringVar(&f.outcome, "outcome", "", "entries with this outcome (allow, deny, expired, cancelled, ended, refused)")
	fs.StringVar(&format, "format", "jsonl", "jsonl (which audit verify -file checks) or csv")
	fs.StringVar(&slackURL, "slack-url", "https://slack.com", "the workspace URL thread links start with (csv), e.g. https://acme.slack.com")
	if err = fs.Parse(args); err != nil {
		return f, "", "", err
	}
	switch {
	case fs.NArg() > 0:
		return f, "", "", fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case format != "jsonl" && format != "csv":
		return f, "", "", fmt.Errorf("-format %q: want jsonl or csv", format)
	case f.outcome != "" && !store.Outcome(f.outcome).Valid():
		return f, "", "", fmt.Errorf("-outcome %q: want allow, deny, expired, cancelled, ended or refused", f.outcome)
	}
	if f.since, err = parseWhen("-since", *since); err != nil {
		return f, "", "", err
	}
	if f.until, err = parseWhen("-until", *until); err != nil {
		return f, "", "", err
	}
	if !f.since.IsZero() && !f.until.IsZero() && !f.since.Before(f.until) {
		return f, "", "", fmt.Errorf("-since %s is not before -until %s", *since, *until)
	}
	return f, format, strings.TrimRight(slackURL, "/"), nil
}

// parseWhen reads a time flag: RFC 3339, or a date (its midnight UTC).
func parseWhen(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s %q: want RFC 3339 (2026-11-01T09:00:00Z) or a date (2026-11-01)", name, v)
}

// exporter writes an export entry by entry.
type exporter interface {
	// add takes the log's next entry; match: it passes the filters.
	add(e store.AuditEntry, match bool) error
	finish() error
}

// exportHoldMax bounds the lines a jsonl export holds in memory: past it,
// held links are written even before a match needs them (the file stays
// verifiable, only longer).
const exportHoldMax = 10_000

// jsonlExport writes the verifiable export. Until it begins writing it
// holds the links since the newest checkpoint, which anchors the file;
// once writing, the chain goes out as it comes, until a checkpoint after
// the last match: what follows is held, written if another match comes
// and dropped at the end.
type jsonlExport struct {
	enc     *json.Encoder
	cps     map[uint64]store.AuditCheckpoint
	anchor  *store.AuditCheckpoint // the checkpoint the export starts from
	writing bool                   // the anchor and the chain from it were written
	sealed  bool                   // a checkpoint was written after the last match
	held    []any
}

func newJSONLExport(w io.Writer, cps []store.AuditCheckpoint) *jsonlExport {
	x := &jsonlExport{enc: json.NewEncoder(w), cps: map[uint64]store.AuditCheckpoint{}}
	for _, cp := range cps {
		x.cps[cp.Seq] = cp
	}
	return x
}

func (x *jsonlExport) add(e store.AuditEntry, match bool) error {
	chained := e.Seq > 0
	if chained && !x.writing && x.anchor == nil {
		if cp, ok := x.cps[e.Seq-1]; ok {
			x.anchor = &cp // the checkpoint retention kept before the first entry
		}
	}
	var line any
	switch {
	case match:
		line, x.sealed = exportEntry{Record: store.AuditRecordEntry, AuditEntry: e}, false
	case chained:
		d, err := store.AuditDigest(e)
		if err != nil {
			return err
		}
		line = exportOmitted{Record: store.AuditRecordOmitted, AuditOmitted: store.AuditOmitted{ID: e.ID, Seq: e.Seq, Prev: e.Prev, Hash: e.Hash, Digest: hex.EncodeToString(d[:])}}
	default:
		return nil // a legacy entry left out: it is in no chain
	}
	if err := x.put(line, match, false); err != nil {
		return err
	}
	cp, ok := x.cps[e.Seq]
	switch {
	case !chained || !ok:
		return nil
	case !x.writing:
		x.anchor, x.held = &cp, x.held[:0]
		return nil
	case x.sealed:
		return x.put(exportCheckpoint{Record: store.AuditRecordCheckpoint, AuditCheckpoint: cp}, false, true)
	}
	x.sealed = true
	return x.put(exportCheckpoint{Record: store.AuditRecordCheckpoint, AuditCheckpoint: cp}, true, true)
}

// put holds line, or writes it with everything held before: when it must
// go out (a match, the first checkpoint after one), when the chain is
// going out as it comes, or when too much is held (past the last match,
// only at a checkpoint, so the file still ends sealed).
func (x *jsonlExport) put(line any, now, checkpoint bool) error {
	x.held = append(x.held, line)
	full := len(x.held) >= exportHoldMax
	if !now && ((!x.writing && !full) || (x.sealed && !(full && checkpoint))) {
		return nil
	}
	if !x.writing {
		x.writing = true
		if x.anchor != nil {
			x.held = append([]any{exportCheckpoint{Record: store.AuditRecordCheckpoint, AuditCheckpoint: *x.anchor}}, x.held...)
		}
	}
	for _, l := range x.held {
		if err := x.enc.Encode(l); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	x.held = x.held[:0]
	return nil
}

// finish drops what is held: only a tail past the checkpoint after the
// last match, or links that led to no match.
func (x *jsonlExport) finish() error { return nil }

// csvHeader is the spreadsheet's first row: an entry's time, who,
// what it was about (the tool and its input), its words (a deny's reason),
// everyone who approved, how it ended and what settled it, where, links
// and ids.
var csvHeader = []string{"Time (UTC)", "Who", "Who (name)", "Action", "Tool", "Input", "Detail", "Approvers", "Channel", "Outcome", "Rule",
	"Working directory", "Thread link", "Request", "Session", "Seq", "Entry", "Input SHA-256"}

// csvExport writes one row per matching entry.
type csvExport struct {
	out      *csv.Writer
	slackURL string
	header   bool
}

func newCSVExport(w io.Writer, slackURL string) *csvExport {
	return &csvExport{out: csv.NewWriter(w), slackURL: slackURL}
}

func (x *csvExport) add(e store.AuditEntry, match bool) error {
	if !x.header {
		x.header = true
		if err := x.out.Write(csvHeader); err != nil {
			return err
		}
	}
	if !match {
		return nil
	}
	link := ""
	if e.Channel != "" && e.ThreadTS != "" {
		link = x.slackURL + "/archives/" + e.Channel + "/p" + strings.Replace(e.ThreadTS, ".", "", 1)
	}
	seq := ""
	if e.Seq > 0 {
		seq = strconv.FormatUint(e.Seq, 10)
	}
	row := []string{e.At.UTC().Format(time.DateTime), e.By, e.ByName, string(e.Action), e.Tool, e.Input, e.Message, e.Approvers, e.Channel,
		string(e.Outcome), csvRule(e), e.WorkDir, link, e.RequestID, e.SessionID, seq, e.ID, e.InputSHA256}
	for i, v := range row {
		row[i] = spreadsheetSafe(v)
	}
	return x.out.Write(row)
}

// csvRule is what settled a request without a person's click, or what a
// grant entry is about: a policy rule by name, or "grant ID".
func csvRule(e store.AuditEntry) string {
	if e.Rule != "" {
		return e.Rule
	}
	if e.GrantID != "" {
		return "grant " + e.GrantID
	}
	return ""
}

func (x *csvExport) finish() error {
	if !x.header {
		if err := x.out.Write(csvHeader); err != nil {
			return err
		}
	}
	x.out.Flush()
	return x.out.Error()
}

// spreadsheetSafe keeps a spreadsheet from reading a cell as a formula: a
// value that starts like one (=, +, -, @, a tab or a carriage return;
// what Claude ran or a person typed can) gets a leading apostrophe, which
// spreadsheets show as text.
func spreadsheetSafe(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
}
