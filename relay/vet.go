package relay

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/rs/zerolog"
	"github.com/slackgate/slackgate/store"
)

// A worker runs what its operator configured, or what a record signed with
// the bots' key says, and nothing else: write access to the store is not
// control of the worker. Before it starts a process for a session it
// checks the session record (vetSession), and before it delivers an input
// it checks the input (vetInput). What it refuses it does not run or
// deliver; the thread is told in one line (EventRefused, in the worker's
// words, never the record's) and the audit log records it.

// Why a session or an input was refused, as its thread is told.
const (
	WhyUnsigned = "it is not signed by a slackgate bot (it dates from before slackgate signed what it queues, " +
		"or it was written into the store directly)"
	WhyForged       = "its signature does not verify with this worker's key (someone without the bots' signing key wrote or changed it)"
	WhyBadID        = "its id is not one a slackgate bot makes"
	WhyAPI          = "it is an approval API session, which runs where its client runs, never on a slackgate worker"
	WhyWorkDir      = "its working directory is not one this worker may run in (CLAUDE_WORKDIR, CHANNEL_WORKDIRS, DM_WORKDIR)"
	WhyMode         = "its permission mode is not one Claude Code knows"
	WhyOtherSession = "it was signed for another session"
	WhyReplay       = "it was delivered to Claude already, and this is a copy queued again"
)

// RefusedSession is the thread's line for a session the worker would not
// run, why being one of the Why reasons, with what to do about it.
func RefusedSession(why string) string {
	next := " To go on, start a new session from a new message to the bot, outside this thread."
	switch why {
	case WhyWorkDir, WhyMode:
		next = " The operator's configuration of the workers does not allow it."
	case WhyAPI:
		next = ""
	}
	return "slackgate refused to run this session: " + why + "." + next
}

// RefusedInput is the thread's line for an input the worker dropped.
func RefusedInput(control bool, why string) string {
	what := "a queued message"
	if control {
		what = "a queued stop request"
	}
	next := " Claude did not get it."
	if why == WhyUnsigned {
		next += " If it was yours, send it again."
	}
	return "slackgate refused " + what + ": " + why + "." + next
}

// sessionIDRE is the form of the ids bots give sessions (uuid.NewString):
// the only ids a worker passes to the CLI as --session-id or --resume.
var sessionIDRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// refusal is why the worker refuses a record: why for the thread, err for
// the log and the audit entry.
type refusal struct {
	why string
	err error
}

// signatureRefusal turns a failed verification into a refusal.
func signatureRefusal(err error) *refusal {
	if errors.Is(err, store.ErrUnsigned) {
		return &refusal{WhyUnsigned, err}
	}
	return &refusal{WhyForged, err}
}

// vetSession says why the worker must not run sess, which it claimed from
// the queue as id; nil when it may. The signature is checked before what
// the session asks for, so a forged record is called forged; a signed one
// must still ask for a directory this worker's configuration allows (a
// bot's key is no licence to run Claude anywhere).
func (w *Worker) vetSession(id string, sess store.Session) *refusal {
	if !sessionIDRE.MatchString(id) || sess.ID != id {
		return &refusal{WhyBadID, fmt.Errorf("relay: session %q claimed as %q: not a session id a bot makes", claimed(sess.ID), claimed(id))}
	}
	if err := store.VerifySession(w.cfg.VerifyKey, sess); err != nil {
		return signatureRefusal(err)
	}
	switch {
	case sess.API:
		return &refusal{WhyAPI, errors.New("relay: an approval API session")}
	case !w.allowedDir(sess.WorkDir):
		return &refusal{WhyWorkDir, fmt.Errorf("relay: working directory %q is not in AllowedDirs", claimed(sess.WorkDir))}
	case sess.PermissionMode != "" && ValidMode(sess.PermissionMode) != nil:
		return &refusal{WhyMode, ValidMode(sess.PermissionMode)}
	}
	return nil
}

// allowedDir reports whether dir is one of the configured directories.
func (w *Worker) allowedDir(dir string) bool {
	return dir != "" && slices.Contains(w.cfg.allowedDirs, filepath.Clean(dir))
}

// vetInput says why the worker must not deliver in, taken from the queue
// of sessionID; nil when it may. delivered holds the ids the session's
// process was given already.
func (w *Worker) vetInput(sessionID string, in store.Input, delivered map[string]bool) *refusal {
	if err := store.VerifyInput(w.cfg.VerifyKey, in); err != nil {
		return signatureRefusal(err)
	}
	switch {
	case in.SessionID != sessionID:
		return &refusal{WhyOtherSession, fmt.Errorf("relay: input %q signed for session %q", claimed(in.ID), claimed(in.SessionID))}
	case delivered[in.ID]:
		return &refusal{WhyReplay, fmt.Errorf("relay: input %q delivered already", claimed(in.ID))}
	}
	return nil
}

// refuseSession logs and audits the refusal of sess (claimed as id) and
// returns what is left to do with it: mark it failed and tell the thread.
// The audit entry keeps what the record claimed, for whoever looks into it.
func (w *Worker) refuseSession(ctx context.Context, id string, sess store.Session, r *refusal, log zerolog.Logger) sessionEnd {
	log.Error().Err(r.err).Str("claimed_by", claimed(sess.StartedBy)).Str("claimed_workdir", claimed(sess.WorkDir)).
		Str("claimed_mode", claimed(sess.PermissionMode)).Str("claimed_model", claimed(sess.Model)).Msg("refusing to run a session")
	w.audit(ctx, store.AuditEntry{Action: store.AuditSessionRefused, SessionID: id, By: claimed(sess.StartedBy),
		Message: fmt.Sprintf("%s: %v; it claims working directory %q, permission mode %q, model %q",
			r.why, r.err, claimed(sess.WorkDir), claimed(sess.PermissionMode), claimed(sess.Model))}, log)
	return sessionEnd{state: store.SessionFailed, last: &store.Event{Type: store.EventRefused, Text: RefusedSession(r.why)}}
}

// admitInput reports whether in, taken from sessionID's queue, may be
// delivered. One that may not is dropped: not delivered, not put back,
// logged, audited and told in the thread.
func (w *Worker) admitInput(ctx context.Context, sessionID string, in store.Input, delivered map[string]bool, log zerolog.Logger) bool {
	refusal := w.refuseInput(ctx, sessionID, in, delivered, log)
	if refusal == nil {
		return true
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	w.publish(pctx, sessionID, *refusal, log)
	return false
}

// refuseInput logs and audits in when it may not be delivered, and
// returns the event that tells the thread so; nil when in may go.
func (w *Worker) refuseInput(ctx context.Context, sessionID string, in store.Input, delivered map[string]bool, log zerolog.Logger) *store.Event {
	r := w.vetInput(sessionID, in, delivered)
	if r == nil {
		return nil
	}
	log.Error().Err(r.err).Str("input_id", claimed(in.ID)).Str("claimed_by", claimed(in.User)).Msg("refusing a queued input")
	w.audit(ctx, store.AuditEntry{Action: store.AuditInputRefused, SessionID: sessionID, By: claimed(in.User),
		Message: fmt.Sprintf("input %q: %s: %v", claimed(in.ID), r.why, r.err)}, log)
	return &store.Event{Type: store.EventRefused, Text: RefusedInput(in.Control != "", r.why)}
}

// claimed bounds what a refused record says of itself before it reaches
// a log or the audit trail.
func claimed(s string) string { return capText(s, 200) }

// audit appends an entry of the worker's own, logging a failure.
func (w *Worker) audit(ctx context.Context, a store.AuditEntry, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	a.At, a.Message = w.clock.Now(), capText(a.Message, 2000)
	if err := w.st.AppendAudit(ctx, a); err != nil {
		log.Error().Err(err).Str("action", string(a.Action)).Msg("auditing a refusal")
	}
}
