package store

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestQuestionFingerprintChangesWithWhatIsAsked(t *testing.T) {
	const form = `{"questions":[{"question":"Which database?","header":"Database","multiSelect":false,` +
		`"options":[{"label":"Postgres","description":"Relational"},{"label":"SQLite"}]}]}`
	base, qs, err := QuestionFingerprint("AskUserQuestion", json.RawMessage(form))
	if err != nil || len(qs) != 1 || qs[0].Header != "Database" || len(qs[0].Options) != 2 {
		t.Fatalf("QuestionFingerprint = %q, %+v, %v", base, qs, err)
	}
	same := `{"questions":[{"question":"Which database?","header":"Database","options":[{"label":"Postgres","description":"Reworded"},{"label":"SQLite"}]}],"answers":{}}`
	if fp, _, _ := QuestionFingerprint("AskUserQuestion", json.RawMessage(same)); fp != base {
		t.Errorf("a reworded description or an answers field changed the fingerprint")
	}
	for name, other := range map[string]string{
		"Header":      `{"questions":[{"question":"Which database?","header":"DB","options":[{"label":"Postgres"},{"label":"SQLite"}]}]}`,
		"Question":    `{"questions":[{"question":"Which database now?","header":"Database","options":[{"label":"Postgres"},{"label":"SQLite"}]}]}`,
		"OptionOrder": `{"questions":[{"question":"Which database?","header":"Database","options":[{"label":"SQLite"},{"label":"Postgres"}]}]}`,
		"MoreOptions": `{"questions":[{"question":"Which database?","header":"Database","options":[{"label":"Postgres"},{"label":"SQLite"},{"label":"MySQL"}]}]}`,
		"MultiSelect": `{"questions":[{"question":"Which database?","header":"Database","multiSelect":true,"options":[{"label":"Postgres"},{"label":"SQLite"}]}]}`,
	} {
		if fp, _, _ := QuestionFingerprint("AskUserQuestion", json.RawMessage(other)); fp == base {
			t.Errorf("%s: a different form has the same fingerprint", name)
		}
	}
	if fp, _, _ := QuestionFingerprint("mcp__x__AskUserQuestion", json.RawMessage(form)); fp == base {
		t.Error("another tool's form has the same fingerprint")
	}
	if _, _, err := QuestionFingerprint("Bash", json.RawMessage(`{"command":"ls"}`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("a tool input: err = %v, want ErrInvalid", err)
	}
}

func TestARememberedDecisionIsSignedWithItsAnswer(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(nil)
	r := Request{ID: "r1", SessionID: "s1", Kind: KindQuestion, ToolCall: ToolCall{ToolName: "AskUserQuestion", Input: json.RawMessage(`{"questions":[]}`)}}
	d := Decision{Outcome: OutcomeAllow, By: "U1", At: time.Unix(1, 0), Answers: map[string]string{"q": "a"}, Remembered: "ans-1"}
	if err := d.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := SignDecision(key, r, &d); err != nil {
		t.Fatal(err)
	}
	if err := VerifyDecision(pub, r, d); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	forged := d
	forged.Remembered = "ans-2"
	if err := VerifyDecision(pub, r, forged); !errors.Is(err, ErrBadSignature) {
		t.Errorf("another remembered answer's id verified: %v", err)
	}
	deny := Decision{Outcome: OutcomeDeny, At: time.Unix(1, 0), Remembered: "ans-1"}
	if err := deny.Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("a deny from memory: err = %v, want ErrInvalid", err)
	}
}
