package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/slackgate/slackgate/relay/relaytest"
)

// TestGitStatusRunsNoFSMonitorFromTheRepository: Claude Code runs `git
// status` without asking (a read-only command), so no card ever shows it,
// in a repository whose .git/config (a pushed branch, an earlier approved
// command) names an fsmonitor program, which git runs at every status.
// The worker's environment turns core.fsmonitor off for every command
// Claude runs: what runs without a card stays git status.
func TestGitStatusRunsNoFSMonitorFromTheRepository(t *testing.T) {
	t.Parallel()
	marks := t.TempDir()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_status", "Bash", bash("git status", "Status")),
		relaytest.Text("clean"))
	plant(t, a.workdir, marks, map[string]string{
		".git/HEAD":             "ref: refs/heads/main\n",
		".git/config":           "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = \"touch MARKS/git-fsmonitor; false\"\n",
		".git/objects/.keep":    "",
		".git/refs/heads/.keep": "",
	})
	thread := a.mention("what is the status?")
	if res := a.toolResult("toolu_status"); res.IsError {
		t.Fatalf("git status failed: %q", res.Content)
	}
	a.threadText(thread, "clean")
	if _, err := os.Stat(filepath.Join(marks, "git-fsmonitor")); !os.IsNotExist(err) {
		t.Errorf("the repository's fsmonitor ran under git status (err %v)", err)
	}
}
