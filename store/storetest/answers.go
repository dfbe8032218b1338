package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

const questionForm = `{"questions":[{"question":"Which database?","header":"Database","multiSelect":false,` +
	`"options":[{"label":"Postgres","description":"Relational"},{"label":"SQLite"}]}]}`

// rememberedAnswer builds a valid answer to questionForm in scope.
func rememberedAnswer(t *testing.T, scope store.Scope, choice string) store.Standing {
	t.Helper()
	fp, qs, err := store.QuestionFingerprint("AskUserQuestion", json.RawMessage(questionForm))
	requireNoError(t, err, "QuestionFingerprint")
	return store.Standing{Kind: store.StandingAnswer,
		Scope: scope, Fingerprint: fp, Tool: "AskUserQuestion", Questions: qs,
		Answers: map[string]string{"Which database?": choice}, By: "U1", ByName: "Lee", Channel: "C1",
		RequestID: uniq("req"), SessionID: uniq("sess"), At: base,
	}
}

func (h *harness) testAnswers(t *testing.T) {
	t.Run("RememberThenLookUp", h.testRememberLookup)
	t.Run("RememberReplacesTheSameFormAndScope", h.testRememberReplaces)
	t.Run("ForgetRemovesAndIsAudited", h.testForget)
	t.Run("AnsweredFromMemoryIsAudited", h.testAnsweredFromMemory)
	t.Run("RejectsInvalid", h.testAnswersValidation)
}

func (h *harness) testRememberLookup(t *testing.T) {
	s, s2 := h.pair(t)
	ctx := h.ctx(t)
	repo := store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo"}
	a, err := s.Keep(ctx, rememberedAnswer(t, repo, "Postgres"))
	requireNoError(t, err, "Keep")
	if a.ID == "" {
		t.Fatal("Keep returned no id")
	}
	got, err := s2.LookupAnswer(ctx, repo, a.Fingerprint)
	requireNoError(t, err, "LookupAnswer")
	if got.ID != a.ID || got.Kind != store.StandingAnswer || got.Answers["Which database?"] != "Postgres" || got.By != "U1" || !got.At.Equal(base) ||
		got.Scope != repo || !slices.Equal(got.Questions[0].Options, []string{"Postgres", "SQLite"}) {
		t.Errorf("LookupAnswer = %+v, want %+v", got, a)
	}
	// Another scope, another form, the same path through an API token:
	// none of them is this answer's.
	for _, sc := range []store.Scope{
		{Kind: store.ScopeChannel, Value: "/srv/repo"},
		{Kind: store.ScopeRepo, Value: "/srv/other"},
		{Kind: store.ScopeRepo, Value: "/srv/repo", Token: "ci"},
	} {
		_, err := s.LookupAnswer(ctx, sc, a.Fingerprint)
		requireIs(t, err, store.ErrNotFound, "LookupAnswer in "+sc.Key())
	}
	_, err = s.LookupAnswer(ctx, repo, "0000")
	requireIs(t, err, store.ErrNotFound, "LookupAnswer of another form")

	channel := store.Scope{Kind: store.ScopeChannel, Value: "C1"}
	b := rememberedAnswer(t, channel, "SQLite")
	b.At = base.Add(time.Minute)
	b, err = s.Keep(ctx, b)
	requireNoError(t, err, "Keep in a channel")
	list, err := s2.Kept(ctx, store.StandingAnswer)
	requireNoError(t, err, "Kept")
	if len(list) != 2 || list[0].ID != b.ID || list[1].ID != a.ID || list[1].Kind != store.StandingAnswer {
		t.Errorf("Kept = %+v, want the channel's answer, then the repository's (newest first)", list)
	}
}

func (h *harness) testRememberReplaces(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	repo := store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo"}
	first, err := s.Keep(ctx, rememberedAnswer(t, repo, "Postgres"))
	requireNoError(t, err, "Keep")
	second, err := s.Keep(ctx, rememberedAnswer(t, repo, "SQLite"))
	requireNoError(t, err, "Keep again")
	if first.ID == second.ID {
		t.Fatalf("both answers got id %s", first.ID)
	}
	got, err := s.LookupAnswer(ctx, repo, first.Fingerprint)
	requireNoError(t, err, "LookupAnswer")
	if got.ID != second.ID || got.Answers["Which database?"] != "SQLite" {
		t.Errorf("LookupAnswer = %+v, want the newer answer %s", got, second.ID)
	}
	list, err := s.Kept(ctx, store.StandingAnswer)
	requireNoError(t, err, "Kept")
	if len(list) != 1 || list[0].ID != second.ID {
		t.Errorf("Kept = %+v, want only the newer answer", list)
	}
	_, err = s.Forget(ctx, store.StandingAnswer, first.ID, "U2", "Ann")
	requireIs(t, err, store.ErrNotFound, "Forget of the replaced answer")
}

func (h *harness) testForget(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	repo := store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo"}
	a, err := s.Keep(ctx, rememberedAnswer(t, repo, "Postgres"))
	requireNoError(t, err, "Keep")
	gone, err := s.Forget(ctx, store.StandingAnswer, a.ID, "U2", "Ann")
	requireNoError(t, err, "Forget")
	if gone.ID != a.ID || gone.Answers["Which database?"] != "Postgres" {
		t.Errorf("Forget returned %+v, want the answer it removed", gone)
	}
	_, err = s.LookupAnswer(ctx, repo, a.Fingerprint)
	requireIs(t, err, store.ErrNotFound, "LookupAnswer after ForgetAnswer")
	list, err := s.Kept(ctx, store.StandingAnswer)
	requireNoError(t, err, "Kept")
	if len(list) != 0 {
		t.Errorf("Kept after forgetting = %+v, want none", list)
	}
	_, err = s.Forget(ctx, store.StandingAnswer, a.ID, "U2", "Ann")
	requireIs(t, err, store.ErrNotFound, "Forget twice")

	log, err := s.AuditLog(ctx, "", 0)
	requireNoError(t, err, "AuditLog")
	if len(log) != 2 {
		t.Fatalf("AuditLog = %+v, want remembered and forgotten", log)
	}
	rem, fgt := log[0], log[1]
	if rem.Action != store.AuditAnswerRemembered || rem.AnswerID != a.ID || rem.By != "U1" || rem.RequestID != a.RequestID ||
		rem.Message != repo.Key() || !rem.At.Equal(base) {
		t.Errorf("remembered entry = %+v", rem)
	}
	if fgt.Action != store.AuditAnswerForgotten || fgt.AnswerID != a.ID || fgt.By != "U2" || fgt.ByName != "Ann" || fgt.At.IsZero() {
		t.Errorf("forgotten entry = %+v", fgt)
	}
}

func (h *harness) testAnsweredFromMemory(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := newRequest(uniq("sess"), 0)
	r.Kind, r.ToolName, r.Input = store.KindQuestion, "AskUserQuestion", json.RawMessage(questionForm)
	requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
	d := store.Decision{Outcome: store.OutcomeAllow, By: "U1", ByName: "Lee", At: base.Add(time.Second),
		Answers: map[string]string{"Which database?": "Postgres"}, Remembered: "ans-1"}
	settled, err := s.Decide(ctx, r.ID, d)
	requireNoError(t, err, "Decide")
	if settled.Decision == nil || settled.Decision.Remembered != "ans-1" {
		t.Errorf("settled decision = %+v, want it to name the remembered answer", settled.Decision)
	}
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if got.Decision == nil || got.Decision.Remembered != "ans-1" {
		t.Errorf("stored decision = %+v, want it to name the remembered answer", got.Decision)
	}
	log, err := s.AuditLog(ctx, "", 0)
	requireNoError(t, err, "AuditLog")
	if len(log) != 2 || log[1].Action != store.AuditAnsweredFromMemory || log[1].AnswerID != "ans-1" ||
		log[1].Outcome != store.OutcomeAllow || log[1].By != "U1" {
		t.Errorf("AuditLog = %+v, want created, then answered_from_memory naming ans-1 and who remembered it", log)
	}
}

func (h *harness) testAnswersValidation(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	repo := store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo"}
	for name, mutate := range map[string]func(*store.Standing){
		"UnknownScope":     func(a *store.Standing) { a.Scope.Kind = "team" },
		"EmptyScope":       func(a *store.Standing) { a.Scope.Value = " " },
		"NoFingerprint":    func(a *store.Standing) { a.Fingerprint = "" },
		"NoQuestions":      func(a *store.Standing) { a.Questions = nil },
		"MissingAnswer":    func(a *store.Standing) { a.Answers = map[string]string{"Other?": "x"} },
		"ExtraAnswer":      func(a *store.Standing) { a.Answers["Other?"] = "x" },
		"NobodyRemembered": func(a *store.Standing) { a.By = "" },
		"Expires":          func(a *store.Standing) { a.Expires = a.At.Add(time.Hour) },
		"WithRules":        func(a *store.Standing) { a.Rules = []string{"Bash"} },
	} {
		a := rememberedAnswer(t, repo, "Postgres")
		mutate(&a)
		_, err := s.Keep(ctx, a)
		requireIs(t, err, store.ErrInvalid, "Keep "+name)
	}
	a, err := s.Keep(ctx, rememberedAnswer(t, repo, "Postgres"))
	requireNoError(t, err, "Keep")
	_, err = s.Forget(ctx, store.StandingAnswer, a.ID, "", "")
	requireIs(t, err, store.ErrInvalid, "Forget by nobody")
	_, err = s.Forget(ctx, store.StandingAnswer, "ans-unknown", "U2", "")
	requireIs(t, err, store.ErrNotFound, "Forget of an unknown id")
	list, err := s.Kept(ctx, store.StandingAnswer)
	requireNoError(t, err, "Kept")
	if len(list) != 1 {
		t.Errorf("Kept = %+v, want the one valid answer", list)
	}
}
