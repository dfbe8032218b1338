package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/slackgate/slackgate/store"
)

// auditPage is how many entries one store call returns.
const auditPage = 500

// audit prints the store's audit log, oldest first, one JSON object a line:
// every request created and how each was settled, by whom and when, with
// each entry's link in the audit chain. `audit verify` checks the chain,
// `audit export` writes a period of it for an auditor.
//
//	slackgate audit [-after ID] [-limit N]
//	slackgate audit verify [-from ID] [-file F] [-expect SEQ:HASH]… [-allow-unsealed]
//	slackgate audit reset -reason WHY [-by NAME]
//	slackgate audit export [-since T] [-until T] [-channel C] [-user U] [-tool NAME] [-outcome O] [-format jsonl|csv]
func (p program) audit(ctx context.Context, args []string, cfg Config) error {
	if len(args) > 0 {
		switch args[0] {
		case "verify":
			return p.auditVerify(ctx, args[1:], cfg)
		case "export":
			return p.auditExport(ctx, args[1:], cfg)
		case "reset":
			return p.auditReset(ctx, args[1:], cfg)
		}
	}
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	after := fs.String("after", "", "print only entries after this id (the last id printed before)")
	limit := fs.Int("limit", 0, "print at most this many entries (0: all)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("audit: unexpected argument %q (subcommands: verify, export, reset)", fs.Arg(0))
	}
	if *limit < 0 {
		return fmt.Errorf("audit: -limit %d: must be 0 or more", *limit)
	}
	st, err := openExistingStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()

	enc := json.NewEncoder(p.stdout)
	printed := 0
	err = walkAudit(ctx, st, *after, func(e store.AuditEntry) (bool, error) {
		if err := enc.Encode(e); err != nil {
			return false, fmt.Errorf("write: %w", err)
		}
		printed++
		return *limit == 0 || printed < *limit, nil
	})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// walkAudit hands fn every entry after `after` ("" from the start), oldest
// first, a page at a time, until fn says stop or the log ends.
func walkAudit(ctx context.Context, st store.Store, after string, fn func(store.AuditEntry) (bool, error)) error {
	for {
		page, err := st.AuditLog(ctx, after, auditPage)
		if err != nil {
			return err
		}
		for _, e := range page {
			more, err := fn(e)
			if err != nil || !more {
				return err
			}
		}
		if len(page) < auditPage {
			return nil
		}
		after = page[len(page)-1].ID
	}
}
