package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// Bench measures the paths a person waits on. Besides ns/op it reports the
// 50th and 99th percentile of single iterations (p50-us, p99-us), because a
// mean hides the fsync or network stalls that decide how a click feels.
func Bench(b *testing.B, newStore NewFunc) {
	b.Run("CreateDecideWait", func(b *testing.B) {
		s := newStore(b)
		ctx := b.Context()
		sid := uniq("bench-sess")
		var lat []time.Duration
		for b.Loop() {
			r := newRequest(sid, 0)
			start := time.Now()
			if err := s.CreateRequest(ctx, r); err != nil {
				b.Fatal(err)
			}
			// The worker waits while the bot decides, as in production.
			waited := make(chan error, 1)
			go func() {
				_, err := s.WaitDecision(ctx, r.ID)
				waited <- err
			}()
			if _, err := s.Decide(ctx, r.ID, allow("U1")); err != nil {
				b.Fatal(err)
			}
			if err := <-waited; err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
	b.Run("EnqueueNextInput", func(b *testing.B) {
		s := newStore(b)
		ctx := b.Context()
		sid := uniq("bench-sess")
		if _, err := s.Enqueue(ctx, input(sid, "start")); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Claim(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
		if _, err := s.NextInput(ctx, sid, "bench"); err != nil {
			b.Fatal(err)
		}
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := s.Enqueue(ctx, input(sid, "follow-up")); err != nil {
				b.Fatal(err)
			}
			if _, err := s.NextInput(ctx, sid, "bench"); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
	b.Run("PublishConsume", func(b *testing.B) {
		s := newStore(b)
		ctx, cancel := context.WithCancel(b.Context())
		got := make(chan struct{}, 1)
		probed := make(chan struct{}, 1)
		done := make(chan error, 1)
		go func() {
			done <- s.Consume(ctx, uniq("bench-group"), "c", func(_ context.Context, e store.Event) error {
				if e.SessionID == probeSession {
					select {
					case probed <- struct{}{}:
					default:
					}
					return nil
				}
				got <- struct{}{}
				return nil
			})
		}()
		defer func() {
			cancel()
			<-done
		}()
		// Wait for the group to exist: probes until one arrives.
		for ready := false; !ready; {
			if _, err := s.Publish(ctx, store.Event{Type: store.EventSessionStarted, SessionID: probeSession, At: time.Now()}); err != nil {
				b.Fatal(err)
			}
			select {
			case <-probed:
				ready = true
			case <-time.After(probeEvery):
			}
		}
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := s.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: "bench", At: start, Text: "hi"}); err != nil {
				b.Fatal(err)
			}
			<-got
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p int) float64 {
		i := min(len(lat)*p/100, len(lat)-1)
		return float64(lat[i].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(50), "p50-us")
	b.ReportMetric(at(99), "p99-us")
}
