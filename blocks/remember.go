package blocks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// Remembered answers: a question card's "Always answer this way…" menu,
// the thread line when the bot answers from memory, and the App Home view
// that lists what is remembered.

const (
	// ActionRemember is the question card's "Always answer this way…"
	// menu: choosing changes nothing yet; the answer given next (a button,
	// Submit or the form) is remembered for the chosen scope.
	ActionRemember ActionKind = Prefix + "remember"
	// ActionForget is the App Home's Forget button (Action.StandingID).
	ActionForget ActionKind = Prefix + "forget"

	blockRemember = Prefix + "remember"

	// The menu's options, in the value's option slot.
	rememberRepo    = 0
	rememberChannel = 1
	rememberOnce    = 2

	// RememberLabel is the menu's placeholder.
	RememberLabel = "Always answer this way…"
	// RememberBlockID is the block_id of the menu's actions block.
	RememberBlockID = blockRemember
)

// Rememberable reports whether a question card offers to remember its
// answer: a question form with at least one question to fingerprint.
func Rememberable(r store.Request) bool {
	_, _, err := store.QuestionFingerprint(r.ToolName, r.Input)
	return normalize(r).Kind == store.KindQuestion && err == nil
}

// rememberMenu offers to remember the answer, for the session's
// repository (when it has a directory) or its channel. Nothing is chosen
// at first: an answer is remembered only when a person asks.
func (c *card) rememberMenu() {
	id := c.req.ID
	var opts []*slack.OptionBlockObject
	if dir := strings.TrimSpace(c.sess.WorkDir); dir != "" {
		opts = append(opts, slack.NewOptionBlockObject(value(0, rememberRepo, id), plain("Always, in this repository"),
			plainInput(dir, MaxOptionText)))
	}
	opts = append(opts,
		slack.NewOptionBlockObject(value(0, rememberChannel, id), plain("Always, in this channel"), nil),
		slack.NewOptionBlockObject(value(0, rememberOnce, id), plain("Only this time"), nil))
	menu := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain(RememberLabel), string(ActionRemember), opts...)
	c.add(slack.NewActionBlock(blockRemember, menu))
}

// RememberChoice reads from a click's message state which scope the
// person chose in r's "Always answer this way…" menu; "" when none.
func RememberChoice(r store.Request, cb *slack.InteractionCallback) store.ScopeKind {
	if cb == nil || cb.BlockActionState == nil {
		return ""
	}
	a, ok := cb.BlockActionState.Values[blockRemember][string(ActionRemember)]
	if !ok {
		return ""
	}
	_, o, id, ok := parseValue(a.SelectedOption.Value)
	if !ok || id != r.ID {
		return ""
	}
	switch o {
	case rememberRepo:
		return store.ScopeRepo
	case rememberChannel:
		return store.ScopeChannel
	}
	return ""
}

// ScopeWords says where a remembered answer applies, for people.
func ScopeWords(s store.Scope) string {
	switch s.Kind {
	case store.ScopeChannel:
		return "in <#" + Escape(s.Value) + ">"
	case store.ScopeRepo:
		where := "in `" + codeSafe(cutShown(s.Value, 200)) + "`"
		if s.Token != "" {
			where += " (approval API token " + codeSafe(s.Token) + ")"
		}
		return where
	}
	return codeSafe(s.Key())
}

// answerLines lists a remembered answer's questions and answers, one line
// each: "*Header* → answer".
func answerLines(a store.Standing, max int) string {
	var lines []string
	for _, q := range a.Questions {
		name := cmpNonEmpty(q.Header, q.Question)
		lines = append(lines, "*"+codeSafe(cutShown(oneLine(name), 80))+"* → "+codeSafe(cutShown(oneLine(a.Answers[q.Question]), max)))
	}
	return strings.Join(lines, "\n")
}

func cmpNonEmpty(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

// AnsweredFromMemory is the one thread line that replaces a question's
// card when the bot answered it with a remembered answer.
func AnsweredFromMemory(a store.Standing) Message {
	// A name, not a mention: the one who remembered it is not notified
	// each time their answer is used.
	who := codeSafe(oneLine(cmpNonEmpty(cmpNonEmpty(a.ByName, a.By), "someone")))
	head := "🧠 *Answered from memory* · remembered by " + who + " " + ScopeWords(a.Scope) +
		"; an approver can forget it in slackgate's App Home"
	text := cutSafe(head+"\n"+answerLines(a, 300), MaxText)
	fallback := "Answered from memory: " + cut(oneLine(plainAnswers(a)), 200)
	return Message{Text: fallback, Blocks: []slack.Block{section(text)}}
}

// plainAnswers is "header → answer; …" without markup, for a fallback.
func plainAnswers(a store.Standing) string {
	var parts []string
	for _, q := range a.Questions {
		parts = append(parts, cmpNonEmpty(q.Header, q.Question)+" → "+a.Answers[q.Question])
	}
	return Escape(visible(strings.Join(parts, "; ")))
}

// Remembered tells the approver who just remembered a what happens from
// now on.
func Remembered(a store.Standing) Message {
	return Ephemeral("🧠 Remembered. The next time this question comes from a session " + ScopeWords(a.Scope) +
		", it is answered this way without a card:\n" + answerLines(a, 300) +
		"\nForget it in slackgate's App Home, or with `slackgate answers forget " + codeSafe(a.ID) + "`.")
}

// HomeOptions are what the App Home view depends on besides the answers.
type HomeOptions struct {
	// CanForget: the viewer is an approver, so each answer gets a Forget
	// button.
	CanForget bool
	// Notice is shown first (mrkdwn the caller wrote): what a click did.
	Notice string
	// Waiting is the "Waiting for you" section (HomeWaiting), shown
	// above the answers.
	Waiting []slack.Block
	// Grants are the live grants, newest first ("Rules you allowed";
	// CanForget gives each a Forget button too).
	Grants []store.Standing
}

// maxHomeAnswers bounds the answers the Home view lists, so it stays far
// below Slack's 100 blocks whatever is remembered.
const maxHomeAnswers = 40

// HomeView is the App Home tab: the remembered answers, newest first, each
// with where it applies, the question and answer, who remembered it and
// when, and a Forget button for approvers.
func HomeView(answers []store.Standing, o HomeOptions) slack.HomeTabViewRequest {
	bs := []slack.Block{slack.NewHeaderBlock(plain("Remembered answers"))}
	if n := strings.TrimSpace(o.Notice); n != "" {
		bs = append(bs, section(cutSafe(n, MaxText)))
	}
	if len(o.Waiting) > 0 {
		// Waiting for you comes first, under what a click did.
		bs = slices.Concat(bs[1:], o.Waiting, bs[:1])
	}
	intro := "When an approver answers a question with *" + RememberLabel + "*, the same question from a session in " +
		"the same repository or channel is answered that way, without a card."
	if !o.CanForget {
		intro += " Only approvers can forget them."
	}
	bs = append(bs, slack.NewContextBlock("", mrkdwn(intro)), slack.NewDividerBlock())
	if len(answers) == 0 {
		bs = append(bs, section("_Nothing is remembered._"))
	}
	for i, a := range answers {
		if i == maxHomeAnswers {
			bs = append(bs, slack.NewContextBlock("", mrkdwn(fmt.Sprintf("%d more; `slackgate answers list` shows them all.", len(answers)-i))))
			break
		}
		bs = append(bs, homeAnswer(a, o.CanForget))
	}
	bs = append(bs, homeGrants(o.Grants, o.CanForget)...)
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: bs}}
}

// HomeClosed is the App Home tab of someone who may not see it: only why
// (slackgate's own words), no answer.
func HomeClosed(why string) slack.HomeTabViewRequest {
	bs := []slack.Block{slack.NewHeaderBlock(plain("Remembered answers")), section(cutSafe(why, MaxText))}
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: bs}}
}

// homeAnswer is one remembered answer in the Home view.
func homeAnswer(a store.Standing, canForget bool) slack.Block {
	who := codeSafe(cmpNonEmpty(a.ByName, a.By))
	if a.By != "" {
		who = "<@" + Escape(a.By) + ">"
	}
	text := answerLines(a, 200) + "\n_" + ScopeWords(a.Scope) + " · remembered by " + who + " " + dateToken(a.At) + "_"
	var accessory *slack.Accessory
	if canForget {
		b := button(string(ActionForget), "Forget", value(0, 0, a.ID)).WithStyle(slack.StyleDanger).
			WithConfirm(confirm("Forget this answer?", "The next time this question comes, a card asks a person again.", "Forget", "Keep"))
		accessory = slack.NewAccessory(b)
	}
	return slack.NewSectionBlock(mrkdwn(cutSafe(text, MaxText)), nil, accessory, slack.SectionBlockOptionBlockID(blockForgetPrefix+a.ID))
}

// blockForgetPrefix starts the block id of an answer in the Home view.
const blockForgetPrefix = Prefix + "ans:"
