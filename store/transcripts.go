package store

import (
	"context"
	"fmt"
)

// MaxTranscriptBytes bounds what SaveTranscript takes: the transcript as the
// worker stores it (compressed). It keeps one value within what a store
// moves in one command without stalling others (Redis serves one command
// at a time); the worker's own bound (MAX_TRANSCRIPT_BYTES) is on the
// uncompressed file and usually stops a transcript long before this one.
const MaxTranscriptBytes = 32 << 20

// Transcripts keeps each session's Claude Code transcript (the CLI's
// session file, as the worker packs it), so a worker that does not have
// the file on its disk can restore it before it resumes the session. The
// store treats the bytes as opaque.
//
// A transcript belongs to its session: it expires with it (see Store's
// Retention), and cannot be saved for a session the store does not know.
type Transcripts interface {
	// SaveTranscript stores data as the session's transcript, replacing
	// the one saved before. ErrNotFound when the session does not exist;
	// ErrInvalid for an empty id, empty data, or data over
	// MaxTranscriptBytes (nothing is stored then, and the transcript
	// saved before stays).
	SaveTranscript(ctx context.Context, sessionID string, data []byte) error
	// LoadTranscript returns the session's transcript as last saved.
	// ErrNotFound when none was saved (or it expired with its session).
	LoadTranscript(ctx context.Context, sessionID string) ([]byte, error)
}

// ValidateTranscript checks a transcript as SaveTranscript takes it.
func ValidateTranscript(sessionID string, data []byte) error {
	switch {
	case sessionID == "":
		return invalid("transcript without a session")
	case len(data) == 0:
		return invalid("empty transcript for session %s", sessionID)
	case len(data) > MaxTranscriptBytes:
		return fmt.Errorf("%w: transcript of session %s is %d bytes, over the store's bound of %d",
			ErrInvalid, sessionID, len(data), MaxTranscriptBytes)
	}
	return nil
}
