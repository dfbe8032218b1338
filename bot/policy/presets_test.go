package policy

import (
	"encoding/json"
	"testing"
	"time"
)

// TestPresetsAreVetted: every entry of every preset parses, none names a
// program that runs others, and the reads preset allows looking and asks
// for what writes, runs or reads outside the working directory.
func TestPresetsAreVetted(t *testing.T) {
	for name, entries := range presets {
		for _, e := range entries {
			m, err := parseMatcher(e)
			if err != nil {
				t.Errorf("preset %s: %s: %v", name, e, err)
			}
			if m.kind == kindBash && runnerWhy(m.bash) != "" {
				t.Errorf("preset %s: %s runs others: %s", name, e, runnerWhy(m.bash))
			}
		}
	}
	pol := mustParse(t, "rules:\n  - name: r\n    allow: {preset: reads}\n")
	for _, c := range []struct {
		tool, input string
		allow       bool
	}{
		{"Bash", `{"command": "git diff HEAD~1 -- src"}`, true},
		{"Bash", `{"command": "git status --short && ls -la"}`, true},
		{"Read", `{"file_path": "/w/src/main.go"}`, true},
		{"Grep", `{"pattern": "x", "path": "/w"}`, true},
		{"Bash", `{"command": "git diff --output=.git/config"}`, false},
		{"Bash", `{"command": "git log --ext-diff -p"}`, false},
		{"Bash", `{"command": "cat /etc/passwd"}`, false},
		{"Bash", `{"command": "ls > listing.txt"}`, false},
		{"Read", `{"file_path": "/etc/passwd"}`, false},
		{"Edit", `{"file_path": "/w/x", "old_string": "a", "new_string": "b"}`, false},
	} {
		req := Request{Tool: c.tool, Input: json.RawMessage(c.input), Cwd: "/w", Resolved: map[string]string{"/w": "/w", "/w/src/main.go": "/w/src/main.go", "/etc/passwd": "/etc/passwd", "/w/x": "/w/x"}}
		if v := pol.Evaluate(req, time.Time{}); (v.Action == Allow) != c.allow {
			t.Errorf("%s %s: %v, want allowed %v", c.tool, c.input, v.Action, c.allow)
		}
	}
}
