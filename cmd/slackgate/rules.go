package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slackgate/slackgate/store"
)

// rules lists or forgets the grants ("Approve and allow… for 1 hour in
// this session", "… in this repository") in the configured store.
//
//	slackgate rules list [-json]
//	slackgate rules forget [-by NAME] ID
func (p program) rules(ctx context.Context, args []string, cfg Config) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "forget") {
		return errors.New("rules: say list or forget: slackgate rules list [-json] | slackgate rules forget [-by NAME] ID")
	}
	sub := args[0]
	fs := flag.NewFlagSet("rules "+sub, flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	asJSON := fs.Bool("json", false, "list: one JSON object a line instead of a table")
	by := fs.String("by", "", "forget: who forgets it, for the audit log (default: cli:<OS user>)")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("rules %s: %w", sub, err)
	}
	switch {
	case sub == "list" && fs.NArg() > 0:
		return fmt.Errorf("rules list: unexpected argument %q", fs.Arg(0))
	case sub == "forget" && fs.NArg() != 1:
		return errors.New("rules forget: give the id of one rule (slackgate rules list shows them)")
	}
	st, err := openExistingStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if sub == "forget" {
		if err := p.buryForget(ctx, st, cfg, store.TombGrant, fs.Arg(0), cliUser(*by)); err != nil {
			return fmt.Errorf("rules forget: %w", err)
		}
		g, err := st.ForgetGrant(ctx, fs.Arg(0), cliUser(*by), cliUser(*by))
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("rules forget: no rule %q (slackgate rules list shows them)", fs.Arg(0))
		}
		if err != nil {
			return fmt.Errorf("rules forget: %w", err)
		}
		fmt.Fprintf(p.stdout, "forgot %s (%s in %s)\n", g.ID, strings.Join(g.Rules, ", "), g.Scope.Key())
		return nil
	}
	list, err := st.ListGrants(ctx)
	if err != nil {
		return fmt.Errorf("rules list: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(p.stdout)
		for _, g := range list {
			if err := enc.Encode(g); err != nil {
				return fmt.Errorf("rules list: write: %w", err)
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(p.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSCOPE\tRULES\tBY\tAT\tEXPIRES")
	for _, g := range list {
		expires := "never"
		if !g.Expires.IsZero() {
			expires = g.Expires.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.Scope.Key(), strings.Join(g.Rules, ", "), oneLine(g.ByName+" "+g.By),
			g.At.UTC().Format(time.RFC3339), expires)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("rules list: write: %w", err)
	}
	return nil
}
