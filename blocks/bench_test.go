package blocks

import (
	"strconv"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// BenchmarkCard renders a realistic Bash request's card, pending (as the
// bot posts it) and settled (as it edits it once decided): each decision
// renders both, so their cost is CPU per decision on the bot.
//
//	go test -run '^$' -bench 'Card|Escape' -benchmem ./blocks
//
// 2026-11-26, with 5 other processes busy on 2 cores: a pending Bash card
// about 1 ms and 1,244 allocations, a settled one 0.6 ms and 646. Every
// secret rule's regexp runs over all the card's text; a faster path with
// literal pre-checks was removed because a card costs far less than the
// second Slack takes to show one edit.
func BenchmarkCard(b *testing.B) {
	pending := bashRequest()
	pending.Input = []byte(`{"command":"cd /srv/repo && go test -race -count=1 ./store/... 2>&1 | tee /tmp/test.log","description":"Run the store tests with the race detector"}`)
	settled := decided(pending, store.Decision{Outcome: store.OutcomeAllow, By: "U0ALICE", ByName: "alice", At: t0.Add(time.Minute)})
	for _, c := range []struct {
		name string
		r    store.Request
	}{{"pending", pending}, {"settled", settled}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Card(c.r, session)
			}
		})
	}
}

// BenchmarkEscape is the path every piece of input text takes into mrkdwn,
// on text with no secret and no invisible character (the common case): a
// command, and a rule the card offers.
func BenchmarkEscape(b *testing.B) {
	for _, s := range []string{
		"cd /srv/repo && go test -race -count=1 ./store/... 2>&1 | tee /tmp/test.log",
		"Bash(make deploy:*)",
	} {
		b.Run(strconv.Itoa(len(s)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Escape(s)
			}
		})
	}
}

// BenchmarkValidateMessage checks a pending Bash card, as the fake Slack
// does with every message posted to it.
func BenchmarkValidateMessage(b *testing.B) {
	m := Card(bashRequest(), session)
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidateMessage(m.Text, m.Blocks); err != nil {
			b.Fatal(err)
		}
	}
}
