package blocks

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// TestGoldensPassSlacksOwnValidatorOnline sends every golden card and modal to
// Slack's blocks.validate (public, no token), the authority our offline
// validator imitates. Opt-in because it needs the network:
//
//	SLACK_VALIDATE_ONLINE=1 go test -race -run Online ./blocks
func TestGoldensPassSlacksOwnValidatorOnline(t *testing.T) {
	if os.Getenv("SLACK_VALIDATE_ONLINE") != "1" {
		t.Skip("set SLACK_VALIDATE_ONLINE=1 to check the golden payloads with Slack's blocks.validate (needs the network)")
	}
	endpoint := "https://slack.com/api/blocks.validate"
	if u := os.Getenv("SLACK_API_URL"); u != "" {
		endpoint = strings.TrimSuffix(u, "/") + "/blocks.validate"
	}
	check := func(t *testing.T, field string, payload any) {
		t.Helper()
		raw, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(url.Values{field: {string(raw)}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("blocks.validate: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			t.Fatalf("blocks.validate rate-limited us (Retry-After %s); run fewer cases with -run", resp.Header.Get("Retry-After"))
		}
		var out struct {
			OK     bool              `json:"ok"`
			Error  string            `json:"error"`
			Errors []json.RawMessage `json:"errors"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("blocks.validate answer (HTTP %d): %v", resp.StatusCode, err)
		}
		if !out.OK {
			t.Errorf("Slack rejects it: %s %s", out.Error, out.Errors)
		}
	}
	for name, r := range cards() {
		t.Run(name, func(t *testing.T) { check(t, "blocks", Card(r, session).Blocks) })
	}
	for name, v := range modals() {
		t.Run(name, func(t *testing.T) { check(t, "view", v) })
	}
}
