package main

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slackgate/slackgate/store"
)

// answers lists or forgets the remembered answers ("Always answer this
// way") in the configured store.
//
//	slackgate answers list [-json]
//	slackgate answers forget [-by NAME] ID
func (p program) answers(ctx context.Context, args []string, cfg Config) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "forget") {
		return errors.New("answers: say list or forget: slackgate answers list [-json] | slackgate answers forget [-by NAME] ID")
	}
	sub := args[0]
	fs := flag.NewFlagSet("answers "+sub, flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	asJSON := fs.Bool("json", false, "list: one JSON object a line instead of a table")
	by := fs.String("by", "", "forget: who forgets it, for the audit log (default: cli:<OS user>)")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("answers %s: %w", sub, err)
	}
	switch {
	case sub == "list" && fs.NArg() > 0:
		return fmt.Errorf("answers list: unexpected argument %q", fs.Arg(0))
	case sub == "forget" && fs.NArg() != 1:
		return errors.New("answers forget: give the id of one answer (slackgate answers list shows them)")
	}
	st, err := openExistingStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if sub == "forget" {
		return p.forgetAnswer(ctx, st, cfg, fs.Arg(0), *by)
	}
	list, err := st.ListAnswers(ctx)
	if err != nil {
		return fmt.Errorf("answers list: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(p.stdout)
		for _, a := range list {
			if err := enc.Encode(a); err != nil {
				return fmt.Errorf("answers list: write: %w", err)
			}
		}
		return nil
	}
	return writeAnswerTable(p, list)
}

// writeAnswerTable prints the answers as a table, one row per question.
func writeAnswerTable(p program, list []store.RememberedAnswer) error {
	w := tabwriter.NewWriter(p.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSCOPE\tQUESTION\tANSWER\tBY\tAT")
	for _, a := range list {
		for i, q := range a.Questions {
			id, scope, who, at := a.ID, a.Scope.Key(), cmp.Or(a.ByName, a.By), a.At.UTC().Format(time.RFC3339)
			if i > 0 {
				id, scope, who, at = "", "", "", ""
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", id, scope, oneLine(cmp.Or(q.Header, q.Question)), oneLine(a.Answers[q.Question]), who, at)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("answers list: write: %w", err)
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// forgetAnswer buries and forgets one answer in the name of by (or the OS
// user).
func (p program) forgetAnswer(ctx context.Context, st store.Store, cfg Config, id, by string) error {
	by = cliUser(by)
	if err := p.buryForget(ctx, st, cfg, store.TombAnswer, id, by); err != nil {
		return fmt.Errorf("answers forget: %w", err)
	}
	a, err := st.ForgetAnswer(ctx, id, by, by)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("answers forget: no remembered answer %q (slackgate answers list shows them)", id)
	}
	if err != nil {
		return fmt.Errorf("answers forget: %w", err)
	}
	fmt.Fprintf(p.stdout, "forgot %s (%s)\n", a.ID, a.Scope.Key())
	return nil
}

// cliUser is who a store change made from the command line is in the
// name of: by, or cli:<OS user>@<host>.
func cliUser(by string) string {
	if by != "" {
		return by
	}
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return "cli:" + name + "@" + cmp.Or(host, "localhost")
}

// buryForget buries kind id (a store.Tombstone signed with the bots' key,
// so a copy of its record written back stays forgotten) before forgetting
// it, when this command holds the key: DECISION_SIGNING_KEY, or the one
// `slackgate run` keeps in DATA_DIR. Without it the record is forgotten
// unburied, and stderr says what that leaves open.
func (p program) buryForget(ctx context.Context, st store.Store, cfg Config, kind store.TombstoneKind, id, by string) error {
	var key ed25519.PrivateKey
	if cfg.DecisionSigningKey != "" {
		k, err := parseSigningKey(cfg.DecisionSigningKey)
		if err != nil {
			return err
		}
		key = k
	} else if cfg.RedisURL == "" {
		if raw, err := os.ReadFile(filepath.Join(cfg.DataDir, keptKeyFile)); err == nil {
			if k, err := parseSigningKey(strings.TrimSpace(string(raw))); err == nil {
				key = k
			}
		}
	}
	if key == nil {
		fmt.Fprintf(p.stderr, "warning: no DECISION_SIGNING_KEY: %s %s is forgotten without a tombstone; a copy of its record written back into the store would count again\n", kind, id)
		return nil
	}
	t := store.Tombstone{Kind: kind, ID: id, By: by, ByName: by, At: time.Now()}
	if err := store.SignTombstone(key, &t); err != nil {
		return err
	}
	return st.Bury(ctx, t)
}
