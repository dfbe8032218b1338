package main

import (
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// TestModeMenuSwitchesWhatTheCLIAsks: an approver picks acceptEdits on the
// status line; the running CLI takes it (set_permission_mode), the thread
// and the status line say so, and the next Write runs with no card. A
// person who is not an approver changes nothing.
func TestModeMenuSwitchesWhatTheCLIAsks(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee},
		relaytest.Text("Hello."),
		relaytest.ToolUse("toolu_w", "Write", map[string]any{"file_path": "notes.txt", "content": "hi\n"}),
		relaytest.Text("Wrote it."))
	thread := a.mention("hello")
	a.threadText(thread, "Hello.")
	status, err := a.slack.WaitThread(a.ctx, general, thread, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText("Done") && m.HasText("mode `default`")
	})
	if err != nil {
		t.Fatalf("no status line offering the mode menu: %v\n%s", err, a.dump(thread))
	}
	if err := a.slack.Select(a.ctx, sam, status.Ref(), "Permission mode", "acceptEdits: file edits run"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.slack.WaitEphemeral(a.ctx, sam, fakeslack.Text("Nothing was changed")); err != nil {
		t.Fatalf("a non-approver's pick was not refused: %v", err)
	}
	if err := a.slack.Select(a.ctx, lee, status.Ref(), "Permission mode", "acceptEdits: file edits run"); err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "switched to *acceptEdits* by <@"+lee+">")
	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == status.Ref() && m.HasText("mode `acceptEdits`")
	}); err != nil {
		cur, _ := a.slack.Message(status.Ref())
		t.Fatalf("the status line never showed acceptEdits: %v\nnow: %s", err, cur.AllText())
	}

	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "write the notes"); err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "Wrote it.")
	if got := a.file("notes.txt"); got != "hi\n" {
		t.Errorf("notes.txt = %q, want the Write's content", got)
	}
	for _, m := range a.slack.Thread(general, thread) {
		if m.FromBot() && (m.HasText("notes.txt") && len(m.Buttons()) > 0) {
			t.Errorf("the Write got a card under acceptEdits: %s", m.AllText())
		}
	}
}
