package main

import (
	"context"
	"time"

	"github.com/slackgate/slackgate/store"
)

// timedStore measures every store operation that does not block by design
// (Claim, NextInput, WaitDecision and Consume wait for work, so their time
// says nothing about the store), and counts what passes through it:
// decisions, session states, Claude process exits.
type timedStore struct {
	store.Store
	metrics *metrics
}

func (t timedStore) time(op string) func() {
	start := time.Now()
	return func() { t.metrics.storeTime.WithLabelValues(op).Observe(time.Since(start).Seconds()) }
}

func (t timedStore) CreateRequest(ctx context.Context, r store.Request) error {
	defer t.time("create_request")()
	return t.Store.CreateRequest(ctx, r)
}

func (t timedStore) GetRequest(ctx context.Context, id string) (store.Request, error) {
	defer t.time("get_request")()
	return t.Store.GetRequest(ctx, id)
}

func (t timedStore) ListPending(ctx context.Context, sessionID string) ([]store.Request, error) {
	defer t.time("list_pending")()
	return t.Store.ListPending(ctx, sessionID)
}

func (t timedStore) Decide(ctx context.Context, id string, d store.Decision) (store.Request, error) {
	defer t.time("decide")()
	r, err := t.Store.Decide(ctx, id, d)
	if err == nil {
		t.metrics.decided(r)
	}
	return r, err
}

func (t timedStore) Refuse(ctx context.Context, id string, d store.Decision) (store.Request, error) {
	defer t.time("refuse")()
	r, err := t.Store.Refuse(ctx, id, d)
	if err == nil {
		t.metrics.decisions.WithLabelValues(string(store.OutcomeRefused), "system").Inc()
	}
	return r, err
}

func (t timedStore) CountPending(ctx context.Context, sessionID string) (int, error) {
	defer t.time("count_pending")()
	return t.Store.CountPending(ctx, sessionID)
}

func (t timedStore) SetCard(ctx context.Context, id string, card store.MessageRef) (bool, error) {
	defer t.time("set_card")()
	return t.Store.SetCard(ctx, id, card)
}

func (t timedStore) CreateSession(ctx context.Context, s store.Session) error {
	defer t.time("create_session")()
	err := t.Store.CreateSession(ctx, s)
	if err == nil {
		t.metrics.sessions.WithLabelValues(string(s.State)).Inc()
	}
	return err
}

func (t timedStore) GetSession(ctx context.Context, id string) (store.Session, error) {
	defer t.time("get_session")()
	return t.Store.GetSession(ctx, id)
}

func (t timedStore) SessionByThread(ctx context.Context, thread store.MessageRef) (store.Session, error) {
	defer t.time("session_by_thread")()
	return t.Store.SessionByThread(ctx, thread)
}

func (t timedStore) UpdateSession(ctx context.Context, id string, fn func(*store.Session) error) (store.Session, error) {
	defer t.time("update_session")()
	var before store.SessionState
	s, err := t.Store.UpdateSession(ctx, id, func(s *store.Session) error {
		before = s.State // the last try's is the one stored
		return fn(s)
	})
	if err == nil && s.State != before {
		t.metrics.sessions.WithLabelValues(string(s.State)).Inc()
	}
	return s, err
}

func (t timedStore) Enqueue(ctx context.Context, in store.Input) (store.Input, error) {
	defer t.time("enqueue")()
	return t.Store.Enqueue(ctx, in)
}

func (t timedStore) Requeue(ctx context.Context, in store.Input, worker string) error {
	defer t.time("requeue")()
	return t.Store.Requeue(ctx, in, worker)
}

func (t timedStore) Release(ctx context.Context, sessionID, worker string) error {
	defer t.time("release")()
	return t.Store.Release(ctx, sessionID, worker)
}

func (t timedStore) Owned(ctx context.Context, worker string) ([]string, error) {
	defer t.time("owned")()
	return t.Store.Owned(ctx, worker)
}

func (t timedStore) Publish(ctx context.Context, e store.Event) (string, error) {
	defer t.time("publish")()
	id, err := t.Store.Publish(ctx, e)
	if err == nil && e.Type == store.EventExit && e.Exit != nil {
		cause := string(e.Exit.Cause)
		if cause == "" {
			cause = "unknown"
		}
		t.metrics.cliExits.WithLabelValues(cause).Inc()
	}
	return id, err
}

func (t timedStore) MoveCard(ctx context.Context, id string, m store.CardMove) (bool, error) {
	defer t.time("move_card")()
	return t.Store.MoveCard(ctx, id, m)
}

func (t timedStore) FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	defer t.time("first_seen")()
	return t.Store.FirstSeen(ctx, key, ttl)
}

func (t timedStore) ActiveSessionsBy(ctx context.Context, user string) (int, error) {
	defer t.time("active_sessions_by")()
	return t.Store.ActiveSessionsBy(ctx, user)
}

func (t timedStore) SessionsUpdatedSince(ctx context.Context, starter string, since time.Time) (int, error) {
	defer t.time("sessions_updated_since")()
	return t.Store.SessionsUpdatedSince(ctx, starter, since)
}

func (t timedStore) CountPendingUnder(ctx context.Context, prefix string) (int, error) {
	defer t.time("count_pending_under")()
	return t.Store.CountPendingUnder(ctx, prefix)
}

func (t timedStore) QueuedInputs(ctx context.Context, sessionID string) (int, error) {
	defer t.time("queued_inputs")()
	return t.Store.QueuedInputs(ctx, sessionID)
}

func (t timedStore) AppendAudit(ctx context.Context, a store.AuditEntry) error {
	defer t.time("append_audit")()
	return t.Store.AppendAudit(ctx, a)
}

func (t timedStore) ReadySessions(ctx context.Context) (int, error) {
	defer t.time("ready_sessions")()
	return t.Store.ReadySessions(ctx)
}

func (t timedStore) AuditLog(ctx context.Context, after string, limit int) ([]store.AuditEntry, error) {
	defer t.time("audit_log")()
	return t.Store.AuditLog(ctx, after, limit)
}

func (t timedStore) ClaimAuditSink(ctx context.Context, sink, holder string, ttl time.Duration) (store.AuditSink, error) {
	defer t.time("claim_audit_sink")()
	return t.Store.ClaimAuditSink(ctx, sink, holder, ttl)
}

func (t timedStore) AdvanceAuditSink(ctx context.Context, sink, holder string, cur store.AuditCursor) error {
	defer t.time("advance_audit_sink")()
	return t.Store.AdvanceAuditSink(ctx, sink, holder, cur)
}
