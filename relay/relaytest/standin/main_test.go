package main

import (
	"bufio"
	"io"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/slackgate/slackgate/relay"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestATurnAsksThenEnds drives one turn through relay's own codec, the one
// the worker uses: every line must decode as the type the real CLI sends,
// an allow must reach the model as a result and a deny as an error.
func TestATurnAsksThenEnds(t *testing.T) {
	t.Setenv("CLAUDE_CODE_STANDIN_REQUESTS", "2")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-p", "--input-format", "stream-json", "--session-id", "s-1", "--setting-sources", "", "--some-new-flag"}, inR, outW)
		outW.Close()
	}()
	enc := relay.NewEncoder(inW)
	if err := enc.WriteUser("run it"); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var results []relay.ContentBlock
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		m, err := relay.DecodeLine(sc.Bytes())
		if err != nil || !m.Known() {
			t.Fatalf("line %s: known %v, err %v", sc.Bytes(), m.Known(), err)
		}
		kinds = append(kinds, m.Type)
		switch {
		case m.System != nil && m.System.SessionID != "s-1":
			t.Errorf("init names session %q, want s-1", m.System.SessionID)
		case m.ControlRequest != nil && len(results) == 0:
			if err := enc.WritePermission(m.ControlRequest.RequestID, relay.Allow(m.ControlRequest.CanUseTool.Input)); err != nil {
				t.Fatal(err)
			}
		case m.ControlRequest != nil:
			if err := enc.WritePermission(m.ControlRequest.RequestID, relay.Deny("not that one", false)); err != nil {
				t.Fatal(err)
			}
		case m.User != nil:
			bs, err := m.User.Message.Blocks()
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, bs...)
		case m.Result != nil:
			if m.Result.IsError || m.Result.Result != "finished run it (1 denied)" {
				t.Errorf("result %+v", m.Result)
			}
			inW.Close()
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	want := []string{"system", "assistant", "control_request", "user", "assistant", "control_request", "user", "assistant", "result"}
	if !slices.Equal(kinds, want) {
		t.Errorf("lines %v, want %v", kinds, want)
	}
	if len(results) != 2 || results[0].IsError || !results[1].IsError || string(results[1].Content) != `"not that one"` {
		t.Errorf("tool results %+v", results)
	}
}
