package blocks

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/slackgate/slackgate/store"
)

// Needs is how many distinct people must approve a request, and who may:
// a policy rule's ask (count, approvers). A zero Needs, or Count 1, is one
// approval, as without a policy.
type Needs struct {
	Count int
	// From names who may still approve, as Slack mrkdwn mentions
	// ("<!subteam^S0SRE> or <@U0LEE>"), or "anyone"; "" names nobody.
	// The bot leaves out whom the rule never counts (not_self) and who
	// approved already.
	From string
}

// several reports whether the card collects approvals one by one.
func (n Needs) several() bool { return n.Count > 1 }

// progress is the one phrase for how far a request of several approvals
// is, the same on its card (in the lead), its copies, reminders and App
// Home rows: "*Needs 1 more approval* from <!subteam^S0SRE> · ✓ <@U1>";
// to viewer, once they approved, "✓ You approved · waiting for 1 more".
// "" for a request of one approval, and for a settled one.
func progress(r store.Request, n Needs, viewer string) string {
	if !n.several() || r.Decision != nil {
		return ""
	}
	left := max(n.Count-len(r.Approvals), 0)
	if viewer != "" && slices.ContainsFunc(r.Approvals, func(a store.Approval) bool { return a.By == viewer }) {
		return "✓ You approved · waiting for " + strconv.Itoa(left) + " more"
	}
	s := "*Needs " + plural(n.Count, "approval") + "*"
	if len(r.Approvals) > 0 {
		s = "*Needs " + plural(left, "more approval") + "*"
	}
	if n.From != "" {
		s += " from " + n.From
	}
	if len(r.Approvals) > 0 {
		s += " · ✓ " + mentions(r.Approvals)
	}
	return s
}

// approvedBy reports whether user gave one of r's approvals.
func approvedBy(r store.Request, user string) bool {
	return user != "" && slices.ContainsFunc(r.Approvals, func(a store.Approval) bool { return a.By == user })
}

// countWords is a notification's count of several approvals: "1 of 2".
func countWords(r store.Request, n Needs) string {
	if !n.several() || r.Decision != nil {
		return ""
	}
	return strconv.Itoa(len(r.Approvals)) + " of " + strconv.Itoa(n.Count)
}

// editor is the first approver of r when they edited Claude's input: the
// card shows their edit, which the others approve. ok false otherwise.
func editor(r store.Request) (store.Approval, bool) {
	if len(r.Approvals) == 0 || len(r.Approvals[0].Input) == 0 {
		return store.Approval{}, false
	}
	return r.Approvals[0], true
}

// editedLabel heads the diff on a card whose first approver edited the
// input.
func editedLabel(a store.Approval) string {
	return "✏️ *<@" + a.By + ">'s edit* is approved and runs (`+`):"
}

// approveEditLabel is the Approve button of a card whose first approver
// edited the input: "Approve alice's edit".
func approveEditLabel(a store.Approval) string {
	if a.ByName == "" {
		return "Approve the edit"
	}
	return "Approve " + a.ByName + "'s edit"
}

// editDiff shows what an edit changed of Claude's input (both masked):
// for each field that differs (changed, sorted), its lines as - and +
// with the unchanged ones around them; a shell command step by step.
// whole reports whether the diff holds every line of the edited value
// (one field changed, no unchanged line left out), so it can stand for
// that field on the card.
func editDiff(orig, edited json.RawMessage) (text string, changed []string, whole bool) {
	a, b := decodeInput(orig), decodeInput(edited)
	var keys []string
	for k := range b {
		if string(a[k]) != string(b[k]) {
			keys = append(keys, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var parts []string
	whole = len(keys) == 1
	for _, k := range keys {
		old, new := valueText(a[k]), valueText(b[k])
		if k == "command" {
			old, new = strings.Join(stepLines(old), "\n"), strings.Join(stepLines(new), "\n")
		}
		d, all := diffAll(old, new, previewLines)
		switch {
		case a[k] == nil:
			d = "+ " + strings.ReplaceAll(new, "\n", "\n+ ")
		case b[k] == nil:
			d = "- " + strings.ReplaceAll(old, "\n", "\n- ")
		default:
			d = elideRemoved(d)
		}
		whole = whole && all
		if len(keys) > 1 || (k != "command" && k != "content" && k != "new_string") {
			d = k + ":\n" + d
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, "\n"), keys, whole
}

// diffAll is diff with every unchanged line when new has at most lines
// of them; all reports whether it left out no line of new.
func diffAll(old, new string, lines int) (string, bool) {
	if strings.Count(new, "\n") < lines {
		return diffContext(old, new, lines), true
	}
	d := diff(old, new)
	return d, strings.Count(d, "\n") >= strings.Count(new, "\n")
}

// elideRemoved shortens each removed line of d that a line added in its
// place mostly repeats to the words that differ ("- … --timeout=5m"): what
// no longer runs needs no room, what runs is shown whole.
func elideRemoved(d string) string {
	lines := strings.Split(d, "\n")
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && strings.HasPrefix(lines[j], "- ") {
			j++
		}
		k := j
		for k < len(lines) && strings.HasPrefix(lines[k], "+ ") {
			k++
		}
		if j > i && k-j == j-i {
			for n := range j - i {
				lines[i+n] = "- " + changedWords(lines[i+n][2:], lines[j+n][2:])
			}
		}
		i = max(k, i+1)
	}
	return strings.Join(lines, "\n")
}

// changedWords is old with the words it shares with new at both ends
// left out as "…".
func changedWords(old, new string) string {
	a, b := strings.Fields(old), strings.Fields(new)
	pre, suf := sameEnds(a, b)
	mid := a[pre : len(a)-suf]
	if len(mid) == 0 || pre+suf < 2 || runes(old) <= 40 {
		return old
	}
	s := strings.Join(mid, " ")
	if pre > 0 {
		s = "… " + s
	}
	if suf > 0 {
		s += " …"
	}
	return s
}

// mentions names the people of as, in order: "<@U1>, <@U2> and <@U3>".
func mentions(as []store.Approval) string {
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = "<@" + a.By + ">"
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// ApprovalRecorded tells an approver their approval counted and what the
// request still waits for, in the progress phrase's words.
func ApprovalRecorded(r store.Request, n Needs, approver string) string {
	s := progress(r, n, approver)
	if s == "" {
		return "✓ Your approval is recorded."
	}
	if n.From != "" && strings.HasPrefix(s, "✓ You approved") {
		s += " from " + n.From
	}
	return s + "."
}
