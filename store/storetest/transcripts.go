package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/slackgate/slackgate/store"
)

func (h *harness) testTranscripts(t *testing.T) {
	t.Run("RoundTripAndOverwrite", func(t *testing.T) {
		s, s2 := h.pair(t)
		ctx := h.ctx(t)
		sess := createSession(t, ctx, s)
		// Every byte value, as a compressed transcript has them.
		first := make([]byte, 70_000)
		for i := range first {
			first[i] = byte(i * 7)
		}
		requireNoError(t, s.SaveTranscript(ctx, sess.ID, first), "SaveTranscript")
		first[0]++ // the store kept its own copy
		got, err := s2.LoadTranscript(ctx, sess.ID)
		requireNoError(t, err, "LoadTranscript")
		first[0]--
		if !bytes.Equal(got, first) {
			t.Fatalf("LoadTranscript returned %d bytes that differ from the %d saved", len(got), len(first))
		}
		second := []byte("shorter, and saved later")
		requireNoError(t, s2.SaveTranscript(ctx, sess.ID, second), "SaveTranscript again")
		got, err = s.LoadTranscript(ctx, sess.ID)
		requireNoError(t, err, "LoadTranscript after the overwrite")
		if !bytes.Equal(got, second) {
			t.Fatalf("LoadTranscript after the overwrite = %q, want %q", got, second)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sess := createSession(t, ctx, s)
		_, err := s.LoadTranscript(ctx, sess.ID)
		requireIs(t, err, store.ErrNotFound, "LoadTranscript of a session that saved none")
		_, err = s.LoadTranscript(ctx, uniq("sess"))
		requireIs(t, err, store.ErrNotFound, "LoadTranscript of an unknown session")
		// A transcript belongs to a session: none is kept for one the
		// store does not know (it would never expire).
		err = s.SaveTranscript(ctx, uniq("sess"), []byte("x"))
		requireIs(t, err, store.ErrNotFound, "SaveTranscript for an unknown session")
	})
	t.Run("SizeBound", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sess := createSession(t, ctx, s)
		requireNoError(t, s.SaveTranscript(ctx, sess.ID, []byte("kept")), "SaveTranscript")
		err := s.SaveTranscript(ctx, sess.ID, make([]byte, store.MaxTranscriptBytes+1))
		requireIs(t, err, store.ErrInvalid, "SaveTranscript over MaxTranscriptBytes")
		got, err := s.LoadTranscript(ctx, sess.ID)
		requireNoError(t, err, "LoadTranscript after a refused save")
		if string(got) != "kept" {
			t.Fatalf("a refused save changed the transcript to %d bytes; want the one saved before", len(got))
		}
		for name, err := range map[string]error{
			"empty data":    s.SaveTranscript(ctx, sess.ID, nil),
			"no session id": s.SaveTranscript(ctx, "", []byte("x")),
		} {
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("SaveTranscript with %s = %v, want ErrInvalid", name, err)
			}
		}
		if testing.Short() {
			return
		}
		// The bound itself is allowed.
		requireNoError(t, s.SaveTranscript(ctx, sess.ID, make([]byte, store.MaxTranscriptBytes)), "SaveTranscript at MaxTranscriptBytes")
	})
}
