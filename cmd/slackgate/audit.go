package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
)

// auditPage is how many entries one store call returns.
const auditPage = 500

// audit prints the store's audit log, oldest first, one JSON object a line:
// every request created and how each was settled, by whom and when.
//
//	slackgate audit [-after ID] [-limit N]
func (p program) audit(ctx context.Context, args []string, cfg Config) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	after := fs.String("after", "", "print only entries after this id (the last id printed before)")
	limit := fs.Int("limit", 0, "print at most this many entries (0: all)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("audit: unexpected argument %q", fs.Arg(0))
	}
	if *limit < 0 {
		return fmt.Errorf("audit: -limit %d: must be 0 or more", *limit)
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()

	enc := json.NewEncoder(p.stdout)
	cursor, printed := *after, 0
	for *limit == 0 || printed < *limit {
		n := auditPage
		if *limit > 0 {
			n = min(n, *limit-printed)
		}
		entries, err := st.AuditLog(ctx, cursor, n)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		for _, e := range entries {
			if err := enc.Encode(e); err != nil {
				return fmt.Errorf("audit: write: %w", err)
			}
		}
		printed += len(entries)
		if len(entries) < n {
			return nil
		}
		cursor = entries[len(entries)-1].ID
	}
	return nil
}
