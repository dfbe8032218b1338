package auditsink

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

const auditChannelID = "C0AUDIT"

// TestReadChannelReadsTheBotsLinesBackInOrder: every page of the
// channel, oldest line first, the bot's audit lines only (not a message
// that is no audit line), a checkpoint whole; a 429 is waited out, as
// Slack's Retry-After asks.
func TestReadChannelReadsTheBotsLinesBackInOrder(t *testing.T) {
	// Posting the 450 lines is the test's setup; Slack's pacing of posts
	// has no part in what it checks (the read's own 429 is injected).
	fake := fakeslack.New(t, fakeslack.WithoutRateModel())
	fake.AddChannel(auditChannelID, "audit")
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(fake.APIURL()))
	post := func(m blocks.Message) {
		t.Helper()
		if _, _, err := api.PostMessage(auditChannelID, slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...)); err != nil {
			t.Fatal(err)
		}
	}
	cp := store.NextAuditCheckpoint(store.AuditCheckpoint{}, store.AuditLink{Seq: 300, Hash: strings.Repeat("cd", 32), Entry: "e300"}, time.Now())
	if err := store.SignAuditCheckpoint(testSigningKey, &cp); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 450; i++ {
		e := store.AuditEntry{Seq: uint64(i), Hash: fmt.Sprintf("%064x", i), Action: store.AuditSettled, Outcome: store.OutcomeExpired, At: time.Now()}
		post(blocks.AuditMessage([]blocks.AuditLine{{Entry: e}}))
		if i == 300 {
			post(blocks.AuditCheckpointMessage(cp))
			post(blocks.Message{Text: "a note from the bot"})
		}
	}
	fake.RateLimit("conversations.history", 1, time.Second)
	lines, err := ReadChannel(sealCtx(t), api, auditChannelID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 451 {
		t.Fatalf("%d lines read back, want 451", len(lines))
	}
	for i, l := range lines {
		seq := uint64(i + 1) // the checkpoint's line came after entry 300
		if i > 300 {
			seq = uint64(i)
		}
		switch {
		case i == 300:
			if l.Checkpoint == nil || !l.Checkpoint.Same(cp) {
				t.Errorf("line %d = %+v, want the checkpoint", i, l)
			}
		case l.Checkpoint != nil || l.Seq != seq || l.HashPrefix != fmt.Sprintf("%064x", seq)[:16]:
			t.Errorf("line %d = %+v, want entry %d", i, l, seq)
		}
	}
	if n := len(fake.CallsTo("conversations.history")); n != 4 {
		t.Errorf("%d history calls, want 3 pages of 200 and the one answered 429", n)
	}
}
