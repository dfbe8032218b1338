package policy

import (
	"slices"
	"strings"
)

// presets are vetted lists of match entries an allow rule may name
// (allow: {preset: reads}) so a team need not get them right by hand.
// Each names only programs that run nothing else by their own design;
// the option tables (progopts.go) still ask for their options that write
// or run. Bash commands may read outside the working directory: Read
// rules apply to the file tools only.
var presets = map[string][]string{
	// reads: the file tools below the working directory, and git's and
	// the shell's commands that only look.
	"reads": {"Read(./**)", "Bash(git status:*)", "Bash(git diff:*)", "Bash(git log:*)", "Bash(git show:*)",
		"Bash(git blame:*)", "Bash(git branch --show-current)", "Bash(ls:*)", "Bash(pwd)"},
}

// presetNames lists the presets, for errors.
func presetNames() string {
	var names []string
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
