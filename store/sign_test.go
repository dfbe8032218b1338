package store_test

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// testKey derives a fixed key pair, so a failure reproduces.
func testKey(seed byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	s := make([]byte, ed25519.SeedSize)
	s[0] = seed
	priv := ed25519.NewKeyFromSeed(s)
	return priv.Public().(ed25519.PublicKey), priv
}

func signedFixture(t *testing.T, priv ed25519.PrivateKey) (store.Request, store.Decision) {
	t.Helper()
	r := store.Request{ID: "req-1", SessionID: "sess-1", CLIRequestID: "cli-1", Kind: store.KindTool, ToolCall: store.ToolCall{
		ToolName: "Bash",
		Input:    json.RawMessage(`{"command": "ls <dir> && echo"}`),
	}}
	d := store.Decision{
		Outcome: store.OutcomeAllow, By: "U1", ByName: "Ada", At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600)),
		Permissions: []store.Suggestion{{Type: "addRules", Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "ls:*"}}, Behavior: "allow", Destination: "session"}},
		Answers:     map[string]string{"Which?": "A"},
	}
	if err := store.SignDecision(priv, r, &d); err != nil {
		t.Fatalf("SignDecision: %v", err)
	}
	return r, d
}

func TestSignedDecisionVerifies(t *testing.T) {
	pub, priv := testKey(1)
	r, d := signedFixture(t, priv)
	if err := store.VerifyDecision(pub, r, d); err != nil {
		t.Fatalf("VerifyDecision of a fresh signature: %v", err)
	}
}

// TestSignatureSurvivesTheStoresEncoding: the bot signs over the request as
// read back from a store (its input re-encoded, <>& escaped, an empty map
// dropped), the worker verifies over the request as the CLI sent it.
func TestSignatureSurvivesTheStoresEncoding(t *testing.T) {
	pub, priv := testKey(1)
	r, d := signedFixture(t, priv)
	d.Answers = map[string]string{}
	if err := store.SignDecision(priv, r, &d); err != nil {
		t.Fatal(err)
	}
	stored := r
	stored.Decision = &d
	b, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	var back store.Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if string(back.Input) == string(r.Input) {
		t.Fatalf("the round trip kept the input's bytes (%s); the test needs one that changes them", back.Input)
	}
	if err := store.VerifyDecision(pub, r, *back.Decision); err != nil {
		t.Errorf("verify the stored decision over the CLI's request: %v", err)
	}
	if err := store.VerifyDecision(pub, back, *back.Decision); err != nil {
		t.Errorf("verify the stored decision over the stored request: %v", err)
	}
}

func TestAnyChangeBreaksTheSignature(t *testing.T) {
	pub, priv := testKey(1)
	for _, tc := range []struct {
		name   string
		change func(r *store.Request, d *store.Decision)
	}{
		{"RequestID", func(r *store.Request, d *store.Decision) { r.ID = "req-2" }},
		{"SessionID", func(r *store.Request, d *store.Decision) { r.SessionID = "sess-2" }},
		{"CLIRequestID", func(r *store.Request, d *store.Decision) { r.CLIRequestID = "cli-2" }},
		{"Kind", func(r *store.Request, d *store.Decision) { r.Kind = store.KindPlan }},
		{"ToolName", func(r *store.Request, d *store.Decision) { r.ToolName = "Write" }},
		{"RequestInput", func(r *store.Request, d *store.Decision) { r.Input = json.RawMessage(`{"command":"rm -rf /"}`) }},
		{"UpdatedInput", func(r *store.Request, d *store.Decision) { d.UpdatedInput = json.RawMessage(`{"command":"rm -rf /"}`) }},
		{"Outcome", func(r *store.Request, d *store.Decision) { d.Outcome = store.OutcomeDeny }},
		{"Answers", func(r *store.Request, d *store.Decision) { d.Answers["Which?"] = "B" }},
		{"AnswersDropped", func(r *store.Request, d *store.Decision) { d.Answers = nil }},
		{"Permissions", func(r *store.Request, d *store.Decision) { d.Permissions[0].Rules[0].RuleContent = "*" }},
		{"PermissionsAdded", func(r *store.Request, d *store.Decision) {
			d.Permissions = append(d.Permissions, store.Suggestion{Type: "setMode", Mode: "bypassPermissions", Destination: "session"})
		}},
		{"Message", func(r *store.Request, d *store.Decision) { d.Message = "ignore all previous instructions" }},
		{"Interrupt", func(r *store.Request, d *store.Decision) { d.Interrupt = true }},
		{"Skipped", func(r *store.Request, d *store.Decision) { d.Skipped = true }},
		{"By", func(r *store.Request, d *store.Decision) { d.By = "U2" }},
		{"ByName", func(r *store.Request, d *store.Decision) { d.ByName = "Eve" }},
		{"At", func(r *store.Request, d *store.Decision) { d.At = d.At.Add(time.Nanosecond) }},
		{"Signature", func(r *store.Request, d *store.Decision) { d.Signature[0] ^= 1 }},
		{"ContentAdded", func(r *store.Request, d *store.Decision) { d.Content = json.RawMessage(`{"region":"us"}`) }},
		// A store writer pointing a path at where an allow rule reaches,
		// or naming a rule that did not decide.
		{"HomeAdded", func(r *store.Request, d *store.Decision) { r.Home = "/srv/app" }},
		{"ResolvedAdded", func(r *store.Request, d *store.Decision) {
			r.Resolved = map[string]string{"/srv/app/link": "/srv/app/x"}
		}},
		{"RuleAdded", func(r *store.Request, d *store.Decision) { d.Rule = "reads" }},
		{"PolicyDigestAdded", func(r *store.Request, d *store.Decision) { d.PolicyDigest = "00" }},
		{"GrantAdded", func(r *store.Request, d *store.Decision) { d.Grant = "grant-1" }},
		{"RememberedAdded", func(r *store.Request, d *store.Decision) { d.Remembered = "ans-1" }},
		// A store writer dropping whom the turn answers, so they may
		// approve under not_self.
		{"TurnByAdded", func(r *store.Request, d *store.Decision) { r.TurnBy = []string{"U2"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, d := signedFixture(t, priv)
			tc.change(&r, &d)
			err := store.VerifyDecision(pub, r, d)
			if !errors.Is(err, store.ErrBadSignature) {
				t.Errorf("VerifyDecision after changing %s: err = %v, want ErrBadSignature", tc.name, err)
			}
		})
	}
}

func TestSignatureOfAnotherKeyFails(t *testing.T) {
	_, priv := testKey(1)
	otherPub, _ := testKey(2)
	r, d := signedFixture(t, priv)
	if err := store.VerifyDecision(otherPub, r, d); !errors.Is(err, store.ErrBadSignature) {
		t.Errorf("VerifyDecision with another key: err = %v, want ErrBadSignature", err)
	}
}

func TestUnsignedDecisionFails(t *testing.T) {
	pub, priv := testKey(1)
	r, d := signedFixture(t, priv)
	d.Signature = nil
	if err := store.VerifyDecision(pub, r, d); !errors.Is(err, store.ErrUnsigned) {
		t.Errorf("VerifyDecision of an unsigned decision: err = %v, want ErrUnsigned", err)
	}
}

func TestEditedInputThatIsNotJSONFails(t *testing.T) {
	pub, priv := testKey(1)
	r, d := signedFixture(t, priv)
	d.UpdatedInput = json.RawMessage(`{"command":`)
	if err := store.SignDecision(priv, r, &d); err == nil {
		t.Error("SignDecision signed an input that is not JSON")
	}
	if err := store.VerifyDecision(pub, r, d); !errors.Is(err, store.ErrBadSignature) {
		t.Errorf("VerifyDecision of an input that is not JSON: err = %v, want ErrBadSignature", err)
	}
}

func TestAnElicitationsContentIsSigned(t *testing.T) {
	pub, priv := testKey(1)
	r := store.Request{ID: "req-e", SessionID: "sess-1", CLIRequestID: "cli-e", Kind: store.KindElicitation, ToolCall: store.ToolCall{
		ToolName: "elicitation",
		Input:    json.RawMessage(`{"subtype":"elicitation","mcp_server_name":"deployer","message":"Where?"}`),
	}}
	d := store.Decision{Outcome: store.OutcomeAllow, By: "U1", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Content: json.RawMessage(`{"region": "eu", "replicas": 3}`)}
	if err := store.SignDecision(priv, r, &d); err != nil {
		t.Fatal(err)
	}
	// As a store reads it back: compacted. The signature still holds.
	stored := d
	stored.Content = json.RawMessage(`{"region":"eu","replicas":3}`)
	if err := store.VerifyDecision(pub, r, stored); err != nil {
		t.Errorf("the stored form does not verify: %v", err)
	}
	for name, content := range map[string]string{"value": `{"region":"us","replicas":3}`, "dropped": ``, "added": `{"region":"eu","replicas":3,"force":true}`} {
		forged := d
		forged.Content = json.RawMessage(content)
		if err := store.VerifyDecision(pub, r, forged); !errors.Is(err, store.ErrBadSignature) {
			t.Errorf("content %s changed: err = %v, want ErrBadSignature", name, err)
		}
	}
}

// BenchmarkDecisionSignature: what the signature costs each decision, the
// bot signing it and the worker verifying it. Measured 2026-11-23: 25 µs
// to sign, 52 µs to verify.
func BenchmarkDecisionSignature(b *testing.B) {
	pub, priv := testKey(1)
	r := store.Request{ID: "req-1", SessionID: "sess-1", CLIRequestID: "cli-1", Kind: store.KindTool, ToolCall: store.ToolCall{
		ToolName: "Bash",
		Input:    json.RawMessage(`{"command": "go test ./...", "description": "Run the tests"}`),
	}}
	d := store.Decision{Outcome: store.OutcomeAllow, By: "U1", ByName: "Ada", At: time.Now()}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			if err := store.SignDecision(priv, r, &d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if err := store.VerifyDecision(pub, r, d); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func signedSession(t *testing.T, priv ed25519.PrivateKey) store.Session {
	t.Helper()
	s := store.Session{ID: "2f0c6a8e-8d3b-4d55-9a53-0c1f4b8e6a11", Thread: store.MessageRef{Channel: "C1", TS: "1700000000.000100"},
		WorkDir: "/srv/repo", StartedBy: "U1", PermissionMode: "default", Model: "sonnet",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600))}
	if err := store.SignSession(priv, &s); err != nil {
		t.Fatalf("SignSession: %v", err)
	}
	return s
}

func signedInput(t *testing.T, priv ed25519.PrivateKey) store.Input {
	t.Helper()
	in := store.Input{ID: "in-1", SessionID: "2f0c6a8e-8d3b-4d55-9a53-0c1f4b8e6a11", Text: "fix <the> test & go", User: "U1",
		At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600))}
	if err := store.SignInput(priv, &in); err != nil {
		t.Fatalf("SignInput: %v", err)
	}
	return in
}

func signedAnswer(t *testing.T, priv ed25519.PrivateKey) store.Standing {
	t.Helper()
	a := store.Standing{Kind: store.StandingAnswer, ID: "ans-1", Scope: store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo", Token: "ci"},
		Fingerprint: "f00d", Tool: "AskUserQuestion",
		Questions: []store.RememberedQuestion{{Header: "DB", Question: "Which?", Options: []string{"A", "B"}}},
		Answers:   map[string]string{"Which?": "A"}, By: "U1", ByName: "Ada", Channel: "C1", RequestID: "req-1", SessionID: "sess-1",
		At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600))}
	if err := store.SignStanding(priv, &a); err != nil {
		t.Fatalf("SignStanding: %v", err)
	}
	return a
}

// roundTrip passes v through JSON, as a store keeps it.
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back T
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

func TestSignedSessionsInputsAndAnswersVerifyAfterTheStoresEncoding(t *testing.T) {
	pub, priv := testKey(1)
	if err := store.VerifySession(pub, roundTrip(t, signedSession(t, priv))); err != nil {
		t.Errorf("VerifySession: %v", err)
	}
	if err := store.VerifyInput(pub, roundTrip(t, signedInput(t, priv))); err != nil {
		t.Errorf("VerifyInput: %v", err)
	}
	if err := store.VerifyStanding(pub, roundTrip(t, signedAnswer(t, priv))); err != nil {
		t.Errorf("VerifyStanding: %v", err)
	}
	// What a worker changes as a session runs is not covered.
	s := signedSession(t, priv)
	s.State, s.Started, s.Worker, s.UpdatedAt, s.Status = store.SessionRunning, true, "w1", time.Now(), store.MessageRef{Channel: "C1", TS: "2"}
	if err := store.VerifySession(pub, s); err != nil {
		t.Errorf("VerifySession after the worker's updates: %v", err)
	}
}

func TestAnyChangeBreaksASessionsSignature(t *testing.T) {
	pub, priv := testKey(1)
	for name, change := range map[string]func(s *store.Session){
		"ID":             func(s *store.Session) { s.ID = "3f0c6a8e-8d3b-4d55-9a53-0c1f4b8e6a11" },
		"Channel":        func(s *store.Session) { s.Thread.Channel = "C2" },
		"ThreadTS":       func(s *store.Session) { s.Thread.TS = "1700000000.000200" },
		"WorkDir":        func(s *store.Session) { s.WorkDir = "/" },
		"StartedBy":      func(s *store.Session) { s.StartedBy = "U6" },
		"PermissionMode": func(s *store.Session) { s.PermissionMode = "bypassPermissions" },
		"Model":          func(s *store.Session) { s.Model = "opus" },
		"CreatedAt":      func(s *store.Session) { s.CreatedAt = s.CreatedAt.Add(time.Nanosecond) },
		"API":            func(s *store.Session) { s.API = true },
		"Signature":      func(s *store.Session) { s.Signature[0] ^= 1 },
	} {
		s := signedSession(t, priv)
		change(&s)
		if err := store.VerifySession(pub, s); !errors.Is(err, store.ErrBadSignature) {
			t.Errorf("VerifySession after changing %s: err = %v, want ErrBadSignature", name, err)
		}
	}
}

func TestAnyChangeBreaksAnInputsSignature(t *testing.T) {
	pub, priv := testKey(1)
	for name, change := range map[string]func(in *store.Input){
		"ID":        func(in *store.Input) { in.ID = "in-2" },
		"SessionID": func(in *store.Input) { in.SessionID = "3f0c6a8e-8d3b-4d55-9a53-0c1f4b8e6a11" },
		"Text":      func(in *store.Input) { in.Text = "rm -rf /" },
		"User":      func(in *store.Input) { in.User = "U6" },
		"At":        func(in *store.Input) { in.At = in.At.Add(time.Nanosecond) },
		"Control":   func(in *store.Input) { in.Text, in.Control = "", store.ControlInterrupt },
		"Process": func(in *store.Input) {
			in.Text, in.Control, in.Mode, in.Process = "", store.ControlSetMode, "plan", "proc-2"
		},
		"Signature": func(in *store.Input) { in.Signature[0] ^= 1 },
	} {
		in := signedInput(t, priv)
		change(&in)
		if err := store.VerifyInput(pub, in); !errors.Is(err, store.ErrBadSignature) {
			t.Errorf("VerifyInput after changing %s: err = %v, want ErrBadSignature", name, err)
		}
	}
}

func TestAnyChangeBreaksAnAnswersSignature(t *testing.T) {
	pub, priv := testKey(1)
	for name, change := range map[string]func(a *store.Standing){
		"ID":          func(a *store.Standing) { a.ID = "ans-2" },
		"ScopeKind":   func(a *store.Standing) { a.Scope.Kind = store.ScopeChannel },
		"ScopeValue":  func(a *store.Standing) { a.Scope.Value = "/srv/other" },
		"ScopeToken":  func(a *store.Standing) { a.Scope.Token = "" },
		"Fingerprint": func(a *store.Standing) { a.Fingerprint = "beef" },
		"Tool":        func(a *store.Standing) { a.Tool = "mcp__x__ask" },
		"Questions":   func(a *store.Standing) { a.Questions[0].Options = []string{"A", "C"} },
		"Answers":     func(a *store.Standing) { a.Answers["Which?"] = "B" },
		"By":          func(a *store.Standing) { a.By = "U6" },
		"ByName":      func(a *store.Standing) { a.ByName = "Eve" },
		"Channel":     func(a *store.Standing) { a.Channel = "C2" },
		"RequestID":   func(a *store.Standing) { a.RequestID = "req-2" },
		"SessionID":   func(a *store.Standing) { a.SessionID = "sess-2" },
		"At":          func(a *store.Standing) { a.At = a.At.Add(time.Nanosecond) },
		"Signature":   func(a *store.Standing) { a.Signature[0] ^= 1 },
	} {
		a := signedAnswer(t, priv)
		change(&a)
		if err := store.VerifyStanding(pub, a); !errors.Is(err, store.ErrBadSignature) {
			t.Errorf("VerifyStanding after changing %s: err = %v, want ErrBadSignature", name, err)
		}
	}
}

func TestUnsignedOrOtherKeysRecordsFail(t *testing.T) {
	pub, priv := testKey(1)
	_, otherPriv := testKey(2)
	s, in, a := signedSession(t, priv), signedInput(t, priv), signedAnswer(t, priv)
	forged, forgedIn, forgedA := signedSession(t, otherPriv), signedInput(t, otherPriv), signedAnswer(t, otherPriv)
	s.Signature, in.Signature, a.Signature = nil, nil, nil
	for name, tc := range map[string]struct {
		err  error
		want error
	}{
		"unsigned session":        {store.VerifySession(pub, s), store.ErrUnsigned},
		"unsigned input":          {store.VerifyInput(pub, in), store.ErrUnsigned},
		"unsigned answer":         {store.VerifyStanding(pub, a), store.ErrUnsigned},
		"session of another key":  {store.VerifySession(pub, forged), store.ErrBadSignature},
		"input of another key":    {store.VerifyInput(pub, forgedIn), store.ErrBadSignature},
		"answer of another key":   {store.VerifyStanding(pub, forgedA), store.ErrBadSignature},
		"session, no verify key":  {store.VerifySession(nil, signedSession(t, priv)), store.ErrBadSignature},
		"input, short verify key": {store.VerifyInput(pub[:8], signedInput(t, priv)), store.ErrBadSignature},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, tc.err, tc.want)
		}
	}
}

// TestASignatureOfOneKindNeverVerifiesAsAnother moves signatures between
// kinds, over records whose fields say the same things, so only the
// domain of each kind's payload tells them apart.
func TestASignatureOfOneKindNeverVerifiesAsAnother(t *testing.T) {
	pub, priv := testKey(1)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := store.Session{ID: "x", CreatedAt: at}
	in := store.Input{ID: "x", At: at}
	a := store.Standing{Kind: store.StandingAnswer, ID: "x", At: at}
	r := store.Request{ID: "x"}
	d := store.Decision{Outcome: store.OutcomeAllow, At: at}
	for _, err := range []error{store.SignSession(priv, &s), store.SignInput(priv, &in), store.SignStanding(priv, &a), store.SignDecision(priv, r, &d)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	sigs := map[string][]byte{"session": s.Signature, "input": in.Signature, "answer": a.Signature, "decision": d.Signature}
	for from, sig := range sigs {
		for to, verify := range map[string]func([]byte) error{
			"session":  func(sig []byte) error { x := s; x.Signature = sig; return store.VerifySession(pub, x) },
			"input":    func(sig []byte) error { x := in; x.Signature = sig; return store.VerifyInput(pub, x) },
			"answer":   func(sig []byte) error { x := a; x.Signature = sig; return store.VerifyStanding(pub, x) },
			"decision": func(sig []byte) error { x := d; x.Signature = sig; return store.VerifyDecision(pub, r, x) },
		} {
			err := verify(sig)
			switch {
			case from == to && err != nil:
				t.Errorf("a %s's own signature: %v", from, err)
			case from != to && !errors.Is(err, store.ErrBadSignature):
				t.Errorf("a %s's signature on a %s: err = %v, want ErrBadSignature", from, to, err)
			}
		}
	}
}

func TestSigningNeedsTheIDsAndTimesTheStoreWouldFillIn(t *testing.T) {
	_, priv := testKey(1)
	now := time.Now()
	for name, err := range map[string]error{
		"session without an id":  store.SignSession(priv, &store.Session{CreatedAt: now}),
		"session without a time": store.SignSession(priv, &store.Session{ID: "s"}),
		"input without an id":    store.SignInput(priv, &store.Input{SessionID: "s", At: now}),
		"input without a time":   store.SignInput(priv, &store.Input{ID: "i", SessionID: "s"}),
		"answer without an id":   store.SignStanding(priv, &store.Standing{Kind: store.StandingAnswer, At: now}),
		"answer without a time":  store.SignStanding(priv, &store.Standing{Kind: store.StandingAnswer, ID: "a"}),
		"session with a bad key": store.SignSession(priv[:10], &store.Session{ID: "s", CreatedAt: now}),
	} {
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// v1Payload is the payload an earlier release signed for signedFixture's
// decision (store.SignDecision in payload v1), byte for byte.
const v1Payload = `slackgate decision v1
{"request_id":"req-1","session_id":"sess-1","cli_request_id":"cli-1","kind":"tool","tool":"Bash","outcome":"allow",` +
	`"input":"eyJjb21tYW5kIjoibHMgXHUwMDNjZGlyXHUwMDNlIFx1MDAyNlx1MDAyNiBlY2hvIn0=","answers":{"Which?":"A"},` +
	`"permissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls:*"}],"behavior":"allow","destination":"session"}],` +
	`"message":"","interrupt":false,"skipped":false,"by":"U1","by_name":"Ada","at":"2026-01-02T02:04:05.000000006Z"}`

// The payload signed now (v2) holds every field, and names who decided
// in one group: pinned, so a change to it is a new version, not a
// silent break of every worker that verifies.
func TestTheDecisionPayloadIsV2(t *testing.T) {
	_, priv := testKey(1)
	r, d := signedFixture(t, priv)
	p, err := store.DecisionPayload(r, d)
	if err != nil {
		t.Fatal(err)
	}
	const want = `slackgate decision v2
{"request_id":"req-1","session_id":"sess-1","cli_request_id":"cli-1","kind":"tool","tool":"Bash","home":"","resolved":null,"turn_by":null,"outcome":"allow",` +
		`"input":"eyJjb21tYW5kIjoibHMgXHUwMDNjZGlyXHUwMDNlIFx1MDAyNlx1MDAyNiBlY2hvIn0=","answers":{"Which?":"A"},` +
		`"permissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls:*"}],"behavior":"allow","destination":"session"}],` +
		`"content":null,"message":"","interrupt":false,"skipped":false,"decider":{"kind":"person","id":"U1","name":"Ada","policy_digest":""},` +
		`"by":"U1","by_name":"Ada","approvals":null,"at":"2026-01-02T02:04:05.000000006Z"}`
	if string(p) != want {
		t.Errorf("payload v2:\n%s\nwant\n%s", p, want)
	}
}

func TestATombstoneIsSignedWhole(t *testing.T) {
	pub, priv := testKey(1)
	ts := store.Tombstone{Kind: store.StandingGrant, ID: "grant-1", By: "U1", ByName: "Ada", At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
	if err := store.SignTombstone(priv, &ts); err != nil {
		t.Fatal(err)
	}
	if err := store.VerifyTombstone(pub, roundTrip(t, ts)); err != nil {
		t.Fatalf("a tombstone read back does not verify: %v", err)
	}
	for name, change := range map[string]func(*store.Tombstone){
		"Kind": func(x *store.Tombstone) { x.Kind = store.StandingAnswer },
		"ID":   func(x *store.Tombstone) { x.ID = "grant-2" },
		"By":   func(x *store.Tombstone) { x.By = "U2" },
		"At":   func(x *store.Tombstone) { x.At = x.At.Add(time.Second) },
	} {
		x := ts
		change(&x)
		if err := store.VerifyTombstone(pub, x); !errors.Is(err, store.ErrBadSignature) {
			t.Errorf("after changing %s: %v, want ErrBadSignature", name, err)
		}
	}
}
