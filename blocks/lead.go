package blocks

import (
	"strings"

	"github.com/slackgate/slackgate/store"
)

// The first line of a card is also the phone notification: it says what
// Claude wants to do, naming the part that matters, in which project and
// for whom. A settled card leads with its outcome and the same words in the
// past tense.

// pastTense turns a headline verb into what was done.
var pastTense = map[string]string{
	"run": "ran", "write": "wrote", "edit": "edited", "read": "read", "search for": "searched for",
	"fetch": "fetched", "search the web for": "searched the web for", "use": "used",
}

// stepRunes bounds the step of a compound command the lead names: enough
// for the command and its target on a phone's lock screen.
const stepRunes = 64

// act is what a tool request does: verb and object, as the headline words it.
type act struct{ verb, object string }

// toolAct words a tool request; workdir is the session's directory (a
// leading `cd workdir &&` is implied, paths under it are shown relative).
func toolAct(r store.Request, workdir string) act {
	f := decodeInput(r.Input)
	if h, ok := toolHeadlines[r.ToolName]; ok {
		v := f.str(h.field)
		switch r.ToolName {
		case "Bash":
			step, others := mainStep(v, workdir)
			obj := inlineCode(step, headRunes)
			if others > 0 {
				obj = inlineCode(cutWords(step, stepRunes), stepRunes) // the body shows every step whole
			}
			if others > 0 {
				obj += " and " + plural(others, "other step")
			}
			return act{h.verb, obj}
		case "Write", "Edit", "MultiEdit", "NotebookEdit", "Read":
			return act{h.verb, inlineCode(relPath(v, workdir), headRunes)}
		}
		return act{h.verb, inlineCode(v, headRunes)}
	}
	if server, tool, ok := mcpName(r.ToolName); ok {
		return act{"use", inlineCode(tool, headRunes) + " from " + inlineCode(server, headRunes)}
	}
	name := r.ToolName
	if r.DisplayName != "" {
		name = r.DisplayName
	}
	return act{"use", inlineCode(name, headRunes)}
}

// cutWords cuts s to at most max runes at a space, marking the cut "…".
func cutWords(s string, max int) string {
	if runes(s) <= max {
		return s
	}
	c := strings.TrimSuffix(cut(s, max-1), "…")
	if i := strings.LastIndexByte(c, ' '); i > 0 {
		c = c[:i]
	}
	return c + " …"
}

// relPath shows p relative to the session's directory when it lies inside.
func relPath(p, workdir string) string {
	dir := strings.TrimSuffix(workdir, "/")
	if dir == "" {
		return p
	}
	if rest, ok := strings.CutPrefix(p, dir+"/"); ok && rest != "" {
		return rest
	}
	return p
}

// project is the session's directory's base name: what people call the
// project.
func project(s store.Session) string {
	dir := strings.TrimRight(s.WorkDir, "/")
	if dir == "" {
		return ""
	}
	if i := strings.LastIndexAny(dir, "/\\"); i >= 0 {
		dir = dir[i+1:]
	}
	return dir
}

// where is the lead's tail: the project and who started the session.
func (c *card) where() string {
	var parts []string
	if p := project(c.sess); p != "" {
		parts = append(parts, "in *"+strings.ReplaceAll(Escape(cutShown(p, 60)), "*", "∗")+"*")
	}
	if c.sess.StartedBy != "" {
		parts = append(parts, "for "+starter(c.sess.StartedBy))
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

// splitSteps splits a shell command at top-level &&, ||, ; and newlines
// (outside quotes; a pipeline stays one step): a rough parse, good enough to pick a headline step.
func splitSteps(cmd string) []string {
	var steps []string
	for _, p := range stepSpans(cmd) {
		if s := strings.TrimSpace(p.text); s != "" {
			steps = append(steps, s)
		}
	}
	return steps
}

// stepLines is cmd one step a line, each with the operator that ends it
// ("docker build . &&"), a leading cd on the line of the step it leads
// to: all of the command, to show or compare by step.
func stepLines(cmd string) []string {
	var lines []string
	glue := false
	for _, p := range stepSpans(cmd) {
		line := strings.TrimSpace(p.text)
		if p.op != "" && p.op != "\n" {
			line = strings.TrimSpace(line + " " + p.op)
		}
		switch {
		case line == "":
		case glue:
			lines[len(lines)-1] += " " + line
		default:
			lines = append(lines, line)
		}
		glue = len(lines) == 1 && !glue && p.op == "&&" && len(strings.Fields(line)) == 3 && strings.HasPrefix(line, "cd ")
	}
	return lines
}

// span is one step of a command as written, and the operator after it
// ("\n" for a newline, "" at the end).
type span struct{ text, op string }

func stepSpans(cmd string) []span {
	var out []span
	var cur strings.Builder
	var quote rune
	rs := []rune(cmd)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else if r == '\\' && quote == '"' && i+1 < len(rs) {
				cur.WriteRune(r)
				i++
				r = rs[i]
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '\\' && i+1 < len(rs):
			cur.WriteRune(r)
			i++
			r = rs[i]
		case r == ';' || r == '\n' || ((r == '&' || r == '|') && i+1 < len(rs) && rs[i+1] == r):
			op := string(r)
			if r == '&' || r == '|' {
				op += string(r)
				i++
			}
			out = append(out, span{cur.String(), op})
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	return append(out, span{cur.String(), ""})
}

// weights rank commands by what they can do to the world beyond the
// working tree: the headline names the weightiest step.
var weights = map[string]int{
	"kubectl": 5, "helm": 5, "terraform": 5, "rm": 5, "dd": 5, "mkfs": 5, "psql": 5, "mysql": 5,
	"aws": 5, "gcloud": 5, "az": 5, "ssh": 5, "scp": 4, "rsync": 4, "sudo": 5, "kill": 4, "pkill": 4,
	"chmod": 3, "chown": 3, "sh": 4, "bash": 4, "curl": 3, "wget": 3, "docker": 2, "make": 2, "git": 1,
	"npm": 1, "cd": 0, "echo": 0, "ls": 0, "cat": 0, "true": 0, "pwd": 0,
}

// publishing subcommands weigh more than their command.
var publishing = map[string]bool{"push": true, "publish": true, "deploy": true, "apply": true, "release": true}

func stepWeight(step string) int {
	words := strings.Fields(step)
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		words = words[1:] // VAR=value prefixes
	}
	if len(words) == 0 {
		return 0
	}
	w, ok := weights[baseName(words[0])]
	if !ok {
		w = 1
	}
	if len(words) > 1 && publishing[words[1]] {
		w += 2
	}
	if strings.Contains(strings.ToLower(step), "prod") {
		w += 3
	}
	return w
}

// mainStep picks the step of a compound command the headline names and
// counts the others; a leading `cd workdir` is implied and not counted.
func mainStep(cmd, workdir string) (string, int) {
	steps := splitSteps(cmd)
	if len(steps) > 0 && workdir != "" {
		if f := strings.Fields(steps[0]); len(f) == 2 && f[0] == "cd" &&
			strings.TrimSuffix(strings.Trim(f[1], `"'`), "/") == strings.TrimSuffix(workdir, "/") {
			steps = steps[1:]
		}
	}
	if len(steps) <= 1 {
		if len(steps) == 1 && len(splitSteps(cmd)) == 2 {
			return steps[0], 0
		}
		return cmd, 0
	}
	best := 0
	for i, s := range steps {
		if stepWeight(s) > stepWeight(steps[best]) {
			best = i
		}
	}
	return steps[best], len(steps) - 1
}
