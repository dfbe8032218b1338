package store_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/slackgate/slackgate/store"
)

var curlVersion = store.Suggestion{Type: "addRules", Behavior: "allow", Destination: "localSettings",
	Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "curl --version"}}}

func TestSuggestionDigestSurvivesTheStoresEncodingAndNamesOneSuggestion(t *testing.T) {
	b, err := json.Marshal(store.Request{ID: "r", Suggestions: []store.Suggestion{curlVersion, {Type: "setMode", Mode: "acceptEdits", Rules: []store.SuggestionRule{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var back store.Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := store.SuggestionDigest(back.Suggestions[0]), store.SuggestionDigest(curlVersion); got != want {
		t.Errorf("digest after a store's encoding %s, want %s", got, want)
	}
	if got, want := store.SuggestionDigest(back.Suggestions[1]), store.SuggestionDigest(store.Suggestion{Type: "setMode", Mode: "acceptEdits"}); got != want {
		t.Errorf("an empty list and none digest differently: %s, %s", got, want)
	}
	allBash := curlVersion
	allBash.Rules = []store.SuggestionRule{{ToolName: "Bash"}}
	for _, other := range []store.Suggestion{allBash, curlVersion.ForSession()} {
		if store.SuggestionDigest(other) == store.SuggestionDigest(curlVersion) {
			t.Errorf("%+v digests like %+v", other, curlVersion)
		}
	}
}

func TestCheckPermissionsTakesOnlyTheRequestsOwnSuggestionsForTheSession(t *testing.T) {
	r := store.Request{ID: "r", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}, Suggestions: []store.Suggestion{curlVersion}}
	allBash := curlVersion.ForSession()
	allBash.Rules = []store.SuggestionRule{{ToolName: "Bash"}}
	asUser := curlVersion.ForSession()
	asUser.Destination = "userSettings"
	suppressed := r
	suppressed.SuppressAlwaysAllow = true
	question := r
	question.Kind = store.KindQuestion
	for _, c := range []struct {
		name  string
		r     store.Request
		perms []store.Suggestion
		ok    bool
	}{
		{"none", r, nil, true},
		{"its own suggestion, for the session", r, []store.Suggestion{curlVersion.ForSession()}, true},
		{"its own suggestion where the CLI suggested it", r, []store.Suggestion{curlVersion}, false},
		{"its own suggestion in the user's settings", r, []store.Suggestion{asUser}, false},
		{"a rule it did not suggest", r, []store.Suggestion{allBash}, false},
		{"its own and another", r, []store.Suggestion{curlVersion.ForSession(), allBash}, false},
		{"a request that asked not to offer it", suppressed, []store.Suggestion{curlVersion.ForSession()}, false},
		{"a question", question, []store.Suggestion{curlVersion.ForSession()}, false},
	} {
		err := store.CheckPermissions(c.r, c.perms)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, store.ErrNotSuggested)) {
			t.Errorf("%s: %v, want ok %t (else ErrNotSuggested)", c.name, err, c.ok)
		}
	}
}
