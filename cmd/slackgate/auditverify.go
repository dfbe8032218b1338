package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/slackgate/slackgate/store"
)

// auditVerify walks the audit chain of the store, or of an export, and
// checks every link and every checkpoint's signature with the verify key.
// The store is held to what is kept outside it too: the audit channel's
// checkpoints and lines (AUDIT_CHANNEL), the anchor a bot keeps in
// DATA_DIR, and hashes the operator kept (-expect). It says how many
// entries and checkpoints verified and how many entries are not sealed
// yet; a break makes it fail, naming the first entry changed, removed or
// inserted and what proves it, and so do entries no checkpoint seals at
// all (but with -allow-unsealed, for an installation that never sealed).
//
//	slackgate audit verify [-from ID] [-file F] [-expect SEQ:HASH]… [-allow-unsealed]
func (p program) auditVerify(ctx context.Context, args []string, cfg Config) error {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	from := fs.String("from", "", "verify from this entry on, starting at the checkpoint before it (default: the whole log, from its newest reset)")
	file := fs.String("file", "", "verify an export (what slackgate audit export writes, jsonl, or a webhook receiver's bodies) instead of the store")
	var expect expectFlag
	fs.Var(&expect, "expect", "SEQ:HASH: the entry at SEQ must have this hash (as a checkpoint line shows it); repeatable")
	allowUnsealed := fs.Bool("allow-unsealed", false, "pass a log no checkpoint seals yet (a new installation)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("audit verify: unexpected argument %q", fs.Arg(0))
	case *from != "" && *file != "":
		return errors.New("audit verify: -from reads the store, -file an export: give one")
	}
	pub, err := auditVerifyKey(cfg)
	if err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	var rep store.AuditReport
	var out outside
	if *file != "" {
		rep, err = verifyExport(*file, pub, expect)
		out.checks = []string{"nothing beyond the file"}
	} else {
		rep, out, err = p.verifyStore(ctx, cfg, pub, *from, expect)
	}
	if err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	printReport(p.stdout, rep, time.Now())
	if *file == "" {
		printOutside(p.stdout, out)
	}
	switch {
	case rep.Break != nil:
		return fmt.Errorf("audit verify: the chain is broken: %w", rep.Break)
	case rep.Checkpoints == 0 && rep.Entries+rep.Omitted > 0 && !*allowUnsealed:
		return fmt.Errorf("audit verify: %d entries and no checkpoint: nothing proves the log is the one the bots wrote "+
			"(a bot seals within %v; pass -allow-unsealed for an installation that never sealed)", rep.Entries+rep.Omitted, store.AuditSealAfter)
	}
	return nil
}

// verifyStore walks the store's log from its start, or from the
// checkpoint at or before entry from, holding it to what is kept outside
// it. A break before the store's newest reset, when the reset was signed
// over a chain that did not hold (Unlinked), is what the reset
// acknowledged: the log is then verified from the reset on, and the
// break noted.
func (p program) verifyStore(ctx context.Context, cfg Config, pub ed25519.PublicKey, from string, expect expectFlag) (store.AuditReport, outside, error) {
	st, err := openExistingStore(ctx, cfg)
	if err != nil {
		return store.AuditReport{}, outside{}, err
	}
	defer st.Close()
	cps, err := st.AuditCheckpoints(ctx, 0)
	if err != nil {
		return store.AuditReport{}, outside{}, err
	}
	var reset *store.AuditCheckpoint
	for i := range cps {
		if cps[i].Reset {
			reset = &cps[i]
		}
	}
	out, err := p.anchorsOutside(ctx, cfg, reset)
	if err != nil {
		return store.AuditReport{}, out, err
	}
	if len(expect) > 0 {
		out.checks = append(out.checks, fmt.Sprintf("%d hashes given with -expect", len(expect)))
	}
	walk := func(anchor store.AuditCheckpoint) (store.AuditReport, error) {
		v := store.NewAuditVerifier(pub, slices.DeleteFunc(slices.Clone(cps), func(cp store.AuditCheckpoint) bool { return cp.Seq < anchor.Seq }))
		for _, e := range expect {
			v.Expect(e.Seq, e.Hash, "-expect")
		}
		brk := out.hold(v)
		err := walkAudit(ctx, st, anchor.Entry, func(e store.AuditEntry) (bool, error) { return v.Entry(e), nil })
		rep := v.Finish()
		if rep.Break == nil {
			rep.Break = brk
		}
		return rep, err
	}
	var anchor store.AuditCheckpoint
	if from != "" {
		if anchor, err = anchorBefore(ctx, st, cps, from); err != nil {
			return store.AuditReport{}, out, err
		}
	}
	rep, err := walk(anchor)
	if err == nil && from == "" && reset != nil && reset.Unlinked && rep.Break != nil && rep.Break.Seq <= reset.Seq {
		out.notes = append(out.notes, fmt.Sprintf("before the reset at seq %d the log does not hold (%v); the reset acknowledged it, and the log was verified from it on", reset.Seq, rep.Break))
		rep, err = walk(*reset)
	}
	return rep, out, err
}

// anchorBefore finds the newest checkpoint at or before entry id (the
// chain's origin, a zero checkpoint, when none is).
func anchorBefore(ctx context.Context, st store.Store, cps []store.AuditCheckpoint, id string) (store.AuditCheckpoint, error) {
	var seq uint64
	next, err := st.AuditLog(ctx, id, 1)
	if err != nil {
		return store.AuditCheckpoint{}, fmt.Errorf("-from %s: %w", id, err)
	}
	switch head, err := st.AuditHead(ctx); {
	case err != nil:
		return store.AuditCheckpoint{}, fmt.Errorf("-from %s: %w", id, err)
	case len(next) == 1 && next[0].Seq > 0:
		seq = next[0].Seq - 1
	case head.Entry == id:
		seq = head.Seq
	default:
		return store.AuditCheckpoint{}, fmt.Errorf("-from %s: no such entry in the chain", id)
	}
	var anchor store.AuditCheckpoint
	for _, cp := range cps {
		if cp.Seq <= seq {
			anchor = cp
		}
	}
	return anchor, nil
}

// exportRecord is the kind of one line of a jsonl export.
type exportRecord struct {
	Record string `json:"record"`
}

// Lines of a jsonl export (see store.AuditRecordEntry).
type (
	exportEntry      = store.AuditEntryRecord
	exportOmitted    = store.AuditOmittedRecord
	exportCheckpoint = store.AuditCheckpointRecord
)

// maxExportLine bounds one line of an export read back.
const maxExportLine = 16 << 20

// verifyExport verifies an export on its own: its checkpoints first (they
// may stand anywhere in it), then its entries in the file's order.
func verifyExport(path string, pub ed25519.PublicKey, expect expectFlag) (store.AuditReport, error) {
	var cps []store.AuditCheckpoint
	err := readExport(path, func(rec string, line []byte) error {
		if rec != store.AuditRecordCheckpoint {
			return nil
		}
		var c exportCheckpoint
		err := json.Unmarshal(line, &c)
		cps = append(cps, c.AuditCheckpoint)
		return err
	})
	if err != nil {
		return store.AuditReport{}, err
	}
	v := store.NewAuditVerifier(pub, cps)
	for _, e := range expect {
		v.Expect(e.Seq, e.Hash, "-expect")
	}
	err = readExport(path, func(rec string, line []byte) error {
		switch rec {
		case store.AuditRecordEntry:
			var e exportEntry
			if err := json.Unmarshal(line, &e); err != nil {
				return err
			}
			v.Entry(e.AuditEntry)
		case store.AuditRecordOmitted:
			var o exportOmitted
			if err := json.Unmarshal(line, &o); err != nil {
				return err
			}
			v.Omitted(o.AuditOmitted)
		}
		return nil
	})
	if err != nil {
		return store.AuditReport{}, err
	}
	return v.Finish(), nil
}

// readExport hands fn each line of an export with its record kind.
func readExport(path string, fn func(rec string, line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxExportLine)
	for n := 1; sc.Scan(); n++ {
		var r exportRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
		if r.Record != store.AuditRecordEntry && r.Record != store.AuditRecordOmitted && r.Record != store.AuditRecordCheckpoint {
			return fmt.Errorf("%s line %d: unknown record %q (want entry, omitted or checkpoint)", path, n, r.Record)
		}
		if err := fn(r.Record, sc.Bytes()); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// printReport says what verified, plainly: counts, where it started, what
// is not sealed yet, and the break.
func printReport(w io.Writer, rep store.AuditReport, now time.Time) {
	start := "from the start of the chain"
	if rep.From > 0 {
		start = fmt.Sprintf("from the checkpoint at seq %d", rep.From)
	}
	fmt.Fprintf(w, "verified %d entries and %d checkpoints, %s to seq %d\n", rep.Entries, rep.Checkpoints, start, rep.Head.Seq)
	if rep.Omitted > 0 {
		fmt.Fprintf(w, "%d entries left out of the export verified by their link alone\n", rep.Omitted)
	}
	if rep.Legacy > 0 {
		fmt.Fprintf(w, "%d entries from before the chain began carry no link: not verified\n", rep.Legacy)
	}
	for _, r := range rep.Resets {
		fmt.Fprintf(w, "note: an operator reset the chain at seq %d on %s, superseding the checkpoint at seq %d: what came before it was acknowledged, not verified\n",
			r.Seq, r.At.UTC().Format(time.RFC3339), r.PrevSeq)
	}
	if rep.Break != nil {
		fmt.Fprintf(w, "BROKEN: %v\n", rep.Break)
		return
	}
	if rep.Unsealed == 0 {
		fmt.Fprintln(w, "every entry is sealed by a checkpoint")
		return
	}
	fmt.Fprintf(w, "%d entries after the last checkpoint are unsealed: they verify as a chain, but no signature covers them yet\n", rep.Unsealed)
	if !rep.FirstUnsealed.IsZero() && now.Sub(rep.FirstUnsealed) > 2*store.AuditSealAfter {
		fmt.Fprintf(w, "note: the oldest unsealed entry is from %s; a running bot seals within %v, so none has run since, or a checkpoint was removed\n",
			rep.FirstUnsealed.UTC().Format(time.RFC3339), store.AuditSealAfter)
	}
}
