package blocks

import (
	"slices"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// The status line's permission mode menu: approvers switch the running
// claude process between the modes the bot offers (Status.Modes, a subset
// of store.Modes in that order). An option's value is "0|<index in
// store.Modes>|<session id>".

// ModeMenuLabel is the menu's placeholder.
const ModeMenuLabel = "Permission mode"

// modeWords say what each mode does, for the menu.
var modeWords = map[string]string{
	"default":           "default: ask as usual",
	"acceptEdits":       "acceptEdits: file edits run",
	"plan":              "plan: plan, change nothing",
	"bypassPermissions": "bypassPermissions: nothing asks",
}

// ModeOf is the mode a pick on the menu names; false for a value no menu
// of ours carries.
func ModeOf(a Action) (string, bool) {
	if a.Kind != ActionMode || a.Index >= len(store.Modes) {
		return "", false
	}
	return store.Modes[a.Index], true
}

// currentMode is the mode s's running process is in: the one switched to
// from Slack, else the session's own ("default" when it has none).
func currentMode(s store.Session) string {
	switch {
	case s.LiveMode != "":
		return s.LiveMode
	case s.PermissionMode != "":
		return s.PermissionMode
	}
	return "default"
}

// modeMenu is the static select offering modes, the current one
// selected, which confirms before it switches (as Stop does).
func modeMenu(s store.Session, modes []string) slack.BlockElement {
	var opts []*slack.OptionBlockObject
	var initial *slack.OptionBlockObject
	cur := currentMode(s)
	for i, m := range store.Modes {
		if !slices.Contains(modes, m) {
			continue
		}
		var desc *slack.TextBlockObject
		if m == "bypassPermissions" {
			// The line is everyone's; the policy says who may pick it.
			desc = plain("Only for whom the team policy names")
		}
		o := slack.NewOptionBlockObject(value(0, i, s.ID), plain(modeWords[m]), desc)
		opts = append(opts, o)
		if m == cur {
			initial = o
		}
	}
	menu := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain(ModeMenuLabel), string(ActionMode), opts...).
		WithConfirm(confirm("Switch Claude's permission mode?", "Claude switches at once, until its process ends; "+
			"the thread says when it has. acceptEdits and bypassPermissions run what they cover without a card.", "Switch", "Go back"))
	if initial != nil {
		menu.InitialOption = initial
	}
	return menu
}

// ModeChanged is the thread line of a switch of the running process's
// permission mode.
func ModeChanged(e store.Event) Message {
	text := "🔧 Permission mode switched to *" + codeSafe(cutShown(e.Text, 40)) + "*"
	if e.By != "" {
		text += " by <@" + e.By + ">"
	}
	return Message{Text: cut(text, 300), Blocks: []slack.Block{slack.NewContextBlock("", mrkdwn(text))}}
}
