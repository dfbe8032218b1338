package main

// End-to-end tests of what people do on a request's card: deny with a
// reason, edit and approve, always allow, a click by someone who may not
// decide and two at once, and cards that must still fit and arrive (a
// hostile command, a very long write, a storm of rate limits).

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

func TestDenyWithAReasonTellsTheModelAndRunsNothing(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_rm", "Bash", bash("rm -rf build && touch wiped.txt", "Clean the build")),
		relaytest.Text("OK, I will not."))
	thread := a.mention("clean up")
	card := a.card(thread, "rm -rf build")

	a.click(lee, card.Ref(), "Deny")
	view := a.view(lee)
	if _, err := a.slack.SubmitView(a.ctx, lee, view.ID, map[string]string{"Reason (Claude reads it)": "use make clean instead"}); err != nil {
		t.Fatalf("submitting the deny modal: %v", err)
	}

	res := a.toolResult("toolu_rm")
	if !res.IsError || !strings.Contains(res.Content, "use make clean instead") {
		t.Errorf("the model got %q (is_error %v), want the reason as an error result", res.Content, res.IsError)
	}
	a.noFile("wiped.txt")
	final := a.settled(card.Ref(), "Denied")
	if !final.HasText("use make clean instead") || !final.HasText("<@"+lee+">") {
		t.Errorf("the denied card should show the reason and who denied: %s", final.AllText())
	}
}

func TestEditAndApproveRunsTheEditedCommand(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_e", "Bash", bash("echo prod > target.txt", "Pick the target")),
		relaytest.Text("done"))
	thread := a.mention("set the target")
	card := a.card(thread, "echo prod")

	a.click(lee, card.Ref(), "Edit & approve")
	view := a.view(lee)
	if _, err := a.slack.SubmitView(a.ctx, lee, view.ID, map[string]string{"Command": "echo staging > target.txt"}); err != nil {
		t.Fatalf("submitting the edit modal: %v", err)
	}
	if res := a.toolResult("toolu_e"); res.IsError {
		t.Fatalf("the edited command failed: %q", res.Content)
	}
	if got := a.file("target.txt"); got != "staging\n" {
		t.Errorf("target.txt = %q, want the edited command's output", got)
	}
	a.settled(card.Ref(), "Approved")
}

func TestALongEditedCommandIsAttachedToTheThreadWhenItRan(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_e", "Bash", bash("echo one > target.txt", "Write the target")),
		relaytest.Text("done"))
	thread := a.mention("write the target")
	card := a.card(thread, "echo one")

	// The person's edit is far longer than a settled card's one-line summary.
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("echo line-%02d >> target.txt", i))
	}
	edited := strings.Join(lines, "\n")
	a.click(lee, card.Ref(), "Edit & approve")
	if _, err := a.slack.SubmitView(a.ctx, lee, a.view(lee).ID, map[string]string{"Command": edited}); err != nil {
		t.Fatalf("submitting the edit modal: %v", err)
	}
	if res := a.toolResult("toolu_e"); res.IsError {
		t.Fatalf("the edited command failed: %q", res.Content)
	}
	a.settled(card.Ref(), "Approved")
	f, err := a.slack.WaitFile(a.ctx, func(f fakeslack.File) bool {
		return f.ThreadTS == thread && strings.Contains(f.Name, "edited-input")
	})
	if err != nil {
		t.Fatalf("the edited input that ran is not in the thread: %v", err)
	}
	if !strings.Contains(string(f.Content), "line-39") {
		t.Errorf("attached edited input lacks its tail: %q", f.Content)
	}
}

func TestAlwaysAllowSkipsTheSecondIdenticalCommand(t *testing.T) {
	t.Parallel()
	// No redirect: a rule never covers writing to a path, which is checked apart.
	cmd := bash("curl --version", "Which curl")
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_1", "Bash", cmd),
		relaytest.ToolUse("toolu_2", "Bash", cmd),
		relaytest.Text("checked twice"))
	thread := a.mention("check curl twice")
	card := a.card(thread, "curl --version")

	// "Always allow" is the card's "Approve and allow…" menu, then the
	// scope in its second step.
	label := firstOption(t, card, "sg_always")
	if err := a.slack.Select(a.ctx, lee, card.Ref(), "sg_always", label); err != nil {
		t.Fatal(err)
	}
	if v := a.view(lee); !slices.Contains(v.Buttons(), "This session") {
		t.Fatalf("the second step offers %q", v.Buttons())
	}
	if err := a.slack.ClickView(a.ctx, lee, "This session"); err != nil {
		t.Fatal(err)
	}

	for _, id := range []string{"toolu_1", "toolu_2"} {
		if res := a.toolResult(id); res.IsError || !strings.Contains(res.Content, "curl") {
			t.Fatalf("%s: the model got %q (is_error %v), want curl's version", id, res.Content, res.IsError)
		}
	}
	a.threadText(thread, "checked twice")
	a.settled(card.Ref(), "Approved")
	cards := 0
	for _, c := range a.slack.CallsTo("chat.postMessage") {
		// A card is a post with our action buttons; tool-use lines have none.
		if strings.Contains(c.Params.Get("blocks"), "curl --version") && strings.Contains(c.Params.Get("blocks"), `"sg_approve"`) {
			cards++
		}
	}
	if cards != 1 {
		t.Errorf("%d cards for the command, want 1: the second identical command must not be asked", cards)
	}
}

var (
	dbQuestion = map[string]any{"question": "Which database should we use?", "header": "Database", "multiSelect": false,
		"options": []map[string]any{{"label": "SQLite", "description": "one file"}, {"label": "Postgres", "description": "a server"}}}
	featureQuestion = map[string]any{"question": "Which features do you want?", "header": "Features", "multiSelect": true,
		"options": []map[string]any{{"label": "Auth", "description": "log in"}, {"label": "Export", "description": "CSV"}, {"label": "Audit", "description": "who did what"}}}
)

func TestClickByANonApproverChangesNothing(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: "S0LEADS"},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo ok > ok.txt", "ok")),
		relaytest.Text("done"))
	thread := a.mention("go")
	card := a.card(thread, "echo ok")

	a.click(sam, card.Ref(), "Approve")
	if _, err := a.slack.WaitEphemeral(a.ctx, sam, func(m fakeslack.Message) bool { return true }); err != nil {
		t.Fatalf("the non-approver got no explanation: %v", err)
	}
	if m, _ := a.slack.Message(card.Ref()); len(m.Buttons()) == 0 {
		t.Fatalf("the card lost its buttons after a non-approver's click: %s", m.AllText())
	}
	a.noFile("ok.txt")

	a.click(kim, card.Ref(), "Approve") // kim is in S0LEADS
	a.toolResult("toolu_1")
	if final := a.settled(card.Ref(), "Approved"); !final.HasText("<@"+kim+">") || final.HasText("<@"+sam+">") {
		t.Errorf("the card should name kim, not sam: %s", final.AllText())
	}
}

func TestTwoApproversClickingApproveTogetherOneIsToldWhoWon(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee + "," + kim},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo once >> once.txt", "once")),
		relaytest.Text("done"))
	thread := a.mention("go")
	card := a.card(thread, "echo once")

	var wg sync.WaitGroup
	for _, user := range []string{lee, kim} {
		wg.Go(func() {
			if err := a.slack.Click(a.ctx, user, card.Ref(), "Approve"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	a.toolResult("toolu_1")
	if got := a.file("once.txt"); got != "once\n" {
		t.Errorf("once.txt = %q: the command must run exactly once", got)
	}
	final := a.settled(card.Ref(), "Approved")
	winner, loser := lee, kim
	if final.HasText("<@" + kim + ">") {
		winner, loser = kim, lee
	}
	if !final.HasText("<@" + winner + ">") {
		t.Fatalf("the card names nobody: %s", final.AllText())
	}
	if _, err := a.slack.WaitEphemeral(a.ctx, loser, func(m fakeslack.Message) bool { return m.HasText("<@" + winner + ">") }); err != nil {
		t.Errorf("the slower approver was not told who decided: %v", err)
	}
}

func TestCommandWithChannelPingIsShownEscaped(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo '<!channel> see <https://evil.example|docs>' > notice.txt", "<@U0BOSS> notify")),
		relaytest.Text("done"))
	thread := a.mention("notify")
	card := a.card(thread, "notice.txt")

	raw := card.Text + string(card.RawBlocks)
	for _, bad := range []string{"<!channel>", "<https://evil.example|docs>", "<@U0BOSS>"} {
		if strings.Contains(raw, bad) {
			t.Errorf("the card carries %q unescaped", bad)
		}
	}
	if !strings.Contains(raw, "&lt;!channel&gt;") {
		t.Errorf("the card should show the command escaped; raw: %s", raw)
	}
	a.click(lee, card.Ref(), "Approve")
	a.toolResult("toolu_1")
	if got := a.file("notice.txt"); got != "<!channel> see <https://evil.example|docs>\n" {
		t.Errorf("notice.txt = %q: escaping is for Slack only; the command must run as written", got)
	}
}

func TestFourThousandLineWriteFitsAndIsApproved(t *testing.T) {
	t.Parallel()
	var content strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&content, "line %d of the generated fixture\n", i+1)
	}
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_w", "Write", map[string]any{"file_path": "big.txt", "content": content.String()}),
		relaytest.Text("written"))
	thread := a.mention("generate the fixture")
	card := a.card(thread, "big.txt")

	if !card.HasText("lines hidden") {
		t.Errorf("a truncated card should say how much is hidden: %s", card.AllText())
	}
	file, err := a.slack.WaitFile(a.ctx, func(f fakeslack.File) bool { return f.ThreadTS == thread })
	if err != nil {
		t.Fatalf("the full input was not attached to the thread: %v", err)
	}
	if !strings.Contains(string(file.Content), "line 4000 of the generated fixture") {
		t.Errorf("the attached file lacks the end of the input (%d bytes)", len(file.Content))
	}
	a.click(lee, card.Ref(), "Approve")
	if res := a.toolResult("toolu_w"); res.IsError {
		t.Fatalf("the write failed: %q", res.Content)
	}
	if got := a.file("big.txt"); got != content.String() {
		t.Errorf("big.txt has %d bytes, want %d", len(got), content.Len())
	}
	a.settled(card.Ref(), "Approved")
}

func TestRateLimitStormLosesNothing(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.Reply{relaytest.TextBlock("Starting."), relaytest.ToolUseBlock("toolu_1", "Bash", bash("echo 1 > one.txt", "one"))},
		relaytest.Reply{relaytest.TextBlock("Next."), relaytest.ToolUseBlock("toolu_2", "Bash", bash("echo 2 > two.txt", "two"))},
		relaytest.Text("All done."))
	for _, m := range []string{"chat.postMessage", "chat.update"} {
		a.slack.RateLimit(m, 4, time.Second)
	}
	// The clicks' response_urls fail, so both outcomes are edits that
	// meet the storm too.
	a.slack.FailNext(fakeslack.ResponseURLMethod, 2, "used_url")
	thread := a.mention("storm")

	first := a.card(thread, "echo 1")
	a.click(lee, first.Ref(), "Approve")
	second := a.card(thread, "echo 2")
	a.click(lee, second.Ref(), "Approve")
	a.threadText(thread, "All done.")
	a.settled(first.Ref(), "Approved")
	a.settled(second.Ref(), "Approved")
	a.threadText(thread, "Starting.")
	a.threadText(thread, "Next.")

	limited := 0
	for _, c := range a.slack.Calls() {
		if c.Status == 429 {
			limited++
		}
	}
	if limited < 8 {
		t.Errorf("only %d calls were rate limited; the storm did not happen", limited)
	}
	a.file("one.txt")
	a.file("two.txt")
}
