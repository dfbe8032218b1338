package approvalapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func TestAWithdrawalReadsBackAsItWasSent(t *testing.T) {
	for _, w := range []Withdrawal{{}, {Reason: ReasonTerminal}, {Reason: ReasonTimeout, Waited: 10 * time.Minute},
		{Reason: ReasonUnanswered, Waited: 90 * time.Second}} {
		u, err := url.Parse("/v1/requests/x" + w.Query())
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseWithdrawal(u.Query())
		if err != nil || got != w {
			t.Errorf("%+v sent as %q reads back as %+v, %v", w, w.Query(), got, err)
		}
	}
	for _, q := range []string{"reason=bored", "reason=timeout&waited=soon", "reason=timeout&waited=-1s"} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseWithdrawal(v); err == nil {
			t.Errorf("%s was taken", q)
		}
	}
}

func TestValidateNamesWhatIsWrong(t *testing.T) {
	ok := NewRequest{ToolCall: store.ToolCall{ToolName: "Bash", Input: []byte(`{"command":"ls"}`)}, Session: Session{ID: "s-1"}}
	if d, err := ok.Validate(); err != nil || d != DefaultTimeout {
		t.Errorf("a good request: %s, %v", d, err)
	}
	for _, tc := range []struct {
		name string
		edit func(*NewRequest)
		want string
	}{
		{"no tool", func(n *NewRequest) { n.ToolName = "" }, "tool_name"},
		{"input not an object", func(n *NewRequest) { n.Input = []byte(`[1]`) }, "JSON object"},
		{"session id with a dot", func(n *NewRequest) { n.Session.ID = "a.b" }, "session.id"},
		{"timeout too long", func(n *NewRequest) { n.Timeout = "25h" }, "timeout"},
	} {
		n := ok
		tc.edit(&n)
		if _, err := n.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	ran := ToolRan{ToolName: "Bash", Input: []byte(`{}`), Session: Session{ID: "s-1"}, Error: strings.Repeat("e", MaxErrorText+1)}
	if err := ran.Validate(); err == nil || !strings.Contains(err.Error(), "error") {
		t.Errorf("an overlong error: %v", err)
	}
}

// A refusal reaches the caller with the API's own words and its limit.
func TestClientReportsTheAPIsRefusal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":"API token laptop has 100 requests waiting","limit":"API_MAX_PENDING","retry_after":30}`))
	}))
	defer srv.Close()
	_, err := NewClient(srv.URL+"/", "tok", 5*time.Second).Create(context.Background(), NewRequest{})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.Body.Limit != "API_MAX_PENDING" || se.Body.RetryAfter != 30 ||
		!strings.Contains(err.Error(), "429 Too Many Requests: API token laptop has 100 requests waiting") {
		t.Errorf("err = %v (%+v), want the 429 with its body", err, se)
	}
}
