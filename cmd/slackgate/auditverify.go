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
// It says how many entries and checkpoints verified and how many entries
// are not sealed yet; a break makes it fail, naming the first entry
// changed, removed or inserted and the checkpoint that proves it.
//
//	slackgate audit verify [-from ID] [-file F]
func (p program) auditVerify(ctx context.Context, args []string, cfg Config) error {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	from := fs.String("from", "", "verify from this entry on, starting at the checkpoint before it (default: the whole log)")
	file := fs.String("file", "", "verify an export (`slackgate audit export` output, jsonl) instead of the store")
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
	if *file != "" {
		rep, err = verifyExport(*file, pub)
	} else {
		rep, err = p.verifyStore(ctx, cfg, pub, *from)
	}
	if err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	printReport(p.stdout, rep, time.Now())
	if rep.Break != nil {
		return fmt.Errorf("audit verify: the chain is broken: %w", rep.Break)
	}
	return nil
}

// verifyStore walks the store's log from its start, or from the
// checkpoint at or before entry from.
func (p program) verifyStore(ctx context.Context, cfg Config, pub ed25519.PublicKey, from string) (store.AuditReport, error) {
	st, err := openStore(ctx, cfg)
	if err != nil {
		return store.AuditReport{}, err
	}
	defer st.Close()
	cps, err := st.AuditCheckpoints(ctx, 0)
	if err != nil {
		return store.AuditReport{}, err
	}
	after := ""
	if from != "" {
		anchor, err := anchorBefore(ctx, st, cps, from)
		if err != nil {
			return store.AuditReport{}, err
		}
		after = anchor.Entry
		cps = slices.DeleteFunc(cps, func(cp store.AuditCheckpoint) bool { return cp.Seq < anchor.Seq })
	}
	v := store.NewAuditVerifier(pub, cps)
	err = walkAudit(ctx, st, after, func(e store.AuditEntry) (bool, error) { return v.Entry(e), nil })
	if err != nil {
		return store.AuditReport{}, err
	}
	return v.Finish(), nil
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

// Lines of a jsonl export: every line is an object whose "record" says
// what it is, the rest its fields.
type (
	exportEntry struct {
		Record string `json:"record"` // "entry"
		store.AuditEntry
	}
	exportOmitted struct {
		Record string `json:"record"` // "omitted"
		store.AuditOmitted
	}
	exportCheckpoint struct {
		Record string `json:"record"` // "checkpoint"
		store.AuditCheckpoint
	}
)

// maxExportLine bounds one line of an export read back.
const maxExportLine = 16 << 20

// verifyExport verifies an export on its own: its checkpoints first (they
// may stand anywhere in it), then its entries in the file's order.
func verifyExport(path string, pub ed25519.PublicKey) (store.AuditReport, error) {
	var cps []store.AuditCheckpoint
	err := readExport(path, func(rec string, line []byte) error {
		if rec != "checkpoint" {
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
	err = readExport(path, func(rec string, line []byte) error {
		switch rec {
		case "entry":
			var e exportEntry
			if err := json.Unmarshal(line, &e); err != nil {
				return err
			}
			v.Entry(e.AuditEntry)
		case "omitted":
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
		if r.Record != "entry" && r.Record != "omitted" && r.Record != "checkpoint" {
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
