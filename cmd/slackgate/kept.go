package main

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slackgate/slackgate/store"
)

// keptCommand is what the commands that list and forget one kind of
// standing rule say.
type keptCommand struct {
	name  string // the command
	one   string // one of them, as a person names it
	long  string // one of them in full
	about func(store.Standing) string
	table func(w io.Writer, list []store.Standing)
}

var (
	// slackgate answers list [-json] | forget [-by NAME] ID: the remembered
	// answers ("Always answer this way").
	answersCommand = keptCommand{name: "answers", one: "answer", long: "remembered answer",
		about: func(a store.Standing) string { return a.Scope.Key() }, table: answerTable}
	// slackgate rules list [-json] | forget [-by NAME] ID: the grants
	// ("Approve and allow… for 1 hour in this session", "… in this
	// repository").
	rulesCommand = keptCommand{name: "rules", one: "rule", long: "rule",
		about: func(g store.Standing) string { return strings.Join(g.Rules, ", ") + " in " + g.Scope.Key() }, table: grantTable}
)

func (p program) answers(ctx context.Context, args []string, cfg Config) error {
	return p.kept(ctx, answersCommand, store.StandingAnswer, args, cfg)
}

func (p program) rules(ctx context.Context, args []string, cfg Config) error {
	return p.kept(ctx, rulesCommand, store.StandingGrant, args, cfg)
}

// kept lists or forgets the standing rules of kind in the configured
// store, as c.
func (p program) kept(ctx context.Context, c keptCommand, kind store.StandingKind, args []string, cfg Config) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "forget") {
		return fmt.Errorf("%[1]s: say list or forget: slackgate %[1]s list [-json] | slackgate %[1]s forget [-by NAME] ID", c.name)
	}
	sub := c.name + " " + args[0]
	fs := flag.NewFlagSet(sub, flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	asJSON := fs.Bool("json", false, "list: one JSON object a line instead of a table")
	by := fs.String("by", "", "forget: who forgets it, for the audit log (default: cli:<OS user>)")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%s: %w", sub, err)
	}
	switch {
	case args[0] == "list" && fs.NArg() > 0:
		return fmt.Errorf("%s: unexpected argument %q", sub, fs.Arg(0))
	case args[0] == "forget" && fs.NArg() != 1:
		return fmt.Errorf("%s: give the id of one %s (slackgate %s list shows them)", sub, c.one, c.name)
	}
	st, err := openExistingStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if args[0] == "forget" {
		id, who := fs.Arg(0), cliUser(*by)
		if err := p.buryForget(ctx, st, cfg, kind, id, who); err != nil {
			return fmt.Errorf("%s: %w", sub, err)
		}
		gone, err := st.Forget(ctx, kind, id, who, who)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%s: no %s %q (slackgate %s list shows them)", sub, c.long, id, c.name)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", sub, err)
		}
		fmt.Fprintf(p.stdout, "forgot %s (%s)\n", gone.ID, c.about(gone))
		return nil
	}
	list, err := st.Kept(ctx, kind)
	if err != nil {
		return fmt.Errorf("%s: %w", sub, err)
	}
	if *asJSON {
		enc := json.NewEncoder(p.stdout)
		for _, k := range list {
			if err := enc.Encode(k); err != nil {
				return fmt.Errorf("%s: write: %w", sub, err)
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(p.stdout, 2, 8, 2, ' ', 0)
	c.table(w, list)
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%s: write: %w", sub, err)
	}
	return nil
}

// answerTable writes the answers as a table, one row per question.
func answerTable(w io.Writer, list []store.Standing) {
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
}

// grantTable writes the grants as a table, one row each.
func grantTable(w io.Writer, list []store.Standing) {
	fmt.Fprintln(w, "ID\tSCOPE\tRULES\tBY\tAT\tEXPIRES")
	for _, g := range list {
		expires := "never"
		if !g.Expires.IsZero() {
			expires = g.Expires.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.Scope.Key(), strings.Join(g.Rules, ", "), oneLine(g.ByName+" "+g.By),
			g.At.UTC().Format(time.RFC3339), expires)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

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
func (p program) buryForget(ctx context.Context, st store.Store, cfg Config, kind store.StandingKind, id, by string) error {
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
