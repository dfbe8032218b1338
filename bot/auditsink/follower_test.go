package auditsink

import (
	"context"
	"errors"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// beginOnce is a sink whose Begin fails the first time it is called;
// it takes every entry it is given.
type beginOnce struct {
	begins    int
	delivered []uint64
}

func (s *beginOnce) Begin(_ context.Context, a store.AuditSink) (store.AuditCursor, error) {
	s.begins++
	if s.begins == 1 {
		return store.AuditCursor{}, errors.New("conversations.history: timeout")
	}
	return a.Cursor, nil
}

func (s *beginOnce) Deliver(_ context.Context, page []store.AuditEntry, _ func(context.Context) error) (int, string, error) {
	for _, e := range page {
		s.delivered = append(s.delivered, e.Seq)
	}
	return len(page), "", nil
}

func (s *beginOnce) Seal(context.Context, store.AuditCheckpoint, func(context.Context) error) (string, error) {
	return "", nil
}

// TestFollowerBeginsAgainAfterAFailedBegin: a replica taking over a sink
// another replica started delivers nothing until its own Begin succeeds,
// and says it has begun only then.
func TestFollowerBeginsAgainAfterAFailedBegin(t *testing.T) {
	ctx := sealCtx(t)
	st := sealTestStore(t)
	log := zerolog.New(zerolog.NewTestWriter(t))
	first := &Follower{Name: "webhook", Holder: "bot-1", Store: st, Sink: &beginOnce{begins: 1}, Log: log}
	first.defaults()
	if _, err := first.round(ctx, log); err != nil || !first.Status().Begun {
		t.Fatalf("first replica: round = %v, begun %v; want nil, true", err, first.Status().Begun)
	}
	first.release(ctx, log)
	record(t, st, 3)

	sink := &beginOnce{}
	next := &Follower{Name: "webhook", Holder: "bot-2", Store: st, Sink: sink, Log: log}
	next.defaults()
	if _, err := next.round(ctx, log); err == nil {
		t.Fatal("round with a failing Begin = nil, want its error")
	}
	if st := next.Status(); !st.Holding || st.Begun || len(sink.delivered) != 0 {
		t.Fatalf("after a failed Begin: %+v, delivered %v; want holding, not begun, nothing delivered", st, sink.delivered)
	}
	if _, err := next.round(ctx, log); err != nil {
		t.Fatal(err)
	}
	if sink.begins != 2 || !next.Status().Begun || len(sink.delivered) != 3 {
		t.Errorf("second round: %d Begins, begun %v, delivered %v; want 2, true, the three entries", sink.begins, next.Status().Begun, sink.delivered)
	}
}
