package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// maxBodyBytes caps what HTTP mode reads from a request before verifying it;
// Slack's payloads are far smaller.
const maxBodyBytes = 1 << 20

// Handler returns HTTP mode's routes: POST /slack/events, POST
// /slack/interactive, POST /slack/commands, GET /healthz and, with
// APITokens, the approval API (package approvalapi). Every POST is
// verified against the signing secret first; a request that fails gets 401
// and changes nothing. Run serves it; it is exported for tests and for
// mounting under another server.
func (b *Bot) Handler() http.Handler {
	h := &slackHTTP{secret: b.cfg.SigningSecret, seen: b.st, log: b.log,
		onEvent: b.events.onEvent, onInteraction: b.onInteraction, onCommand: b.events.onCommand}
	mux := h.routes()
	if b.approvalAPI != nil {
		b.approvalAPI.Mount(mux)
	}
	return mux
}

// slackHTTP is HTTP mode's transport: it verifies what Slack posts,
// refuses replays and acknowledges, then hands each payload to the same
// handlers Socket Mode calls.
type slackHTTP struct {
	secret        string // SLACK_SIGNING_SECRET
	seen          firstSeener
	log           zerolog.Logger
	onEvent       func(slackevents.EventsAPIEvent)
	onInteraction func(*slack.InteractionCallback) any
	onCommand     func(slack.SlashCommand) any
}

// firstSeener remembers signatures across replicas (Store.FirstSeen).
type firstSeener interface {
	FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// routes are Slack's three POST routes and GET /healthz.
func (h *slackHTTP) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /slack/events", h.verified(h.serveEvents))
	mux.HandleFunc("POST /slack/interactive", h.verified(h.once(h.serveInteractive)))
	mux.HandleFunc("POST /slack/commands", h.verified(h.once(h.serveCommands)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// serveHTTP serves h on ln (nil: a listener on addr) until ctx ends: HTTP
// mode's routes, or in Socket Mode the approval API alone.
func serveHTTP(ctx context.Context, log zerolog.Logger, ln net.Listener, addr string, h http.Handler, what string) error {
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			return errors.Join(errors.New("bot: listen (is HTTP_ADDR in use?)"), err)
		}
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	log.Info().Str("addr", ln.Addr().String()).Msg(what + " listening")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return errors.Join(errors.New("bot: http serve"), err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		log.Warn().Err(err).Msg("http shutdown")
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return errors.Join(errors.New("bot: http serve"), err)
	}
	return nil
}

// verified reads the body (capped), checks Slack's v0 signature and the
// 5-minute timestamp window, and hands the handler the request with its
// body restored, since slack-go's parsers read it again.
func (h *slackHTTP) verified(next func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		sv, err := slack.NewSecretsVerifier(r.Header, h.secret)
		if err == nil {
			_, _ = sv.Write(body)
			err = sv.Ensure()
		}
		if err != nil {
			h.log.Warn().Err(err).Str("path", r.URL.Path).Str("remote", r.RemoteAddr).Msg("rejected unsigned slack request")
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next(w, r, body)
	}
}

// replayTTL is how long a signature is remembered: slack-go accepts a
// timestamp up to 5 minutes either side of now, so one signed request stays
// acceptable for 10 minutes; one more covers clocks that disagree.
const replayTTL = 11 * time.Minute

// once refuses a signed request seen before. Slack never sends the same
// interactive payload or slash command twice (it does not retry them), and
// its signature covers the timestamp and the body, so a second sight of one
// within the window is a replay by someone who captured it. The signature
// is remembered in the shared store, so a replay to another replica is
// caught too. Events are left to the event_id dedup: Slack retries them.
func (h *slackHTTP) once(next func(w http.ResponseWriter, r *http.Request, body []byte)) func(w http.ResponseWriter, r *http.Request, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		log := h.log.With().Str("path", r.URL.Path).Str("remote", r.RemoteAddr).Logger()
		first, err := h.seen.FirstSeen(r.Context(), "slack-signature:"+r.Header.Get("X-Slack-Signature"), replayTTL)
		if err != nil {
			// Refuse: without the store nothing this request asks can be done.
			log.Error().Err(err).Msg("cannot tell whether the request was seen before")
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		if !first {
			log.Warn().Msg("replayed request")
			http.Error(w, "replayed request", http.StatusUnauthorized)
			return
		}
		next(w, r, body)
	}
}

func (h *slackHTTP) serveEvents(w http.ResponseWriter, r *http.Request, body []byte) {
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		// Acknowledge anyway: an event we cannot parse will not parse on a
		// retry either.
		h.log.Warn().Err(err).Msg("unparsable events api payload")
		w.WriteHeader(http.StatusOK)
		return
	}
	if ev.Type == slackevents.URLVerification {
		var ch slackevents.EventsAPIURLVerificationEvent
		if err := json.Unmarshal(body, &ch); err != nil {
			http.Error(w, "bad challenge", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, ch.Challenge)
		return
	}
	w.WriteHeader(http.StatusOK)
	h.onEvent(ev)
}

func (h *slackHTTP) serveInteractive(w http.ResponseWriter, r *http.Request, _ []byte) {
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(formValue(r, "payload")), &cb); err != nil {
		h.log.Warn().Err(err).Msg("unparsable interaction payload")
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	resp := h.onInteraction(&cb)
	writeAck(w, resp)
}

func (h *slackHTTP) serveCommands(w http.ResponseWriter, r *http.Request, _ []byte) {
	cmd, err := slack.SlashCommandParse(r)
	if err != nil {
		http.Error(w, "bad command", http.StatusBadRequest)
		return
	}
	writeAck(w, h.onCommand(cmd))
}

// formValue reads one field of a form-encoded POST body only (never the
// query string).
func formValue(r *http.Request, key string) string {
	if err := r.ParseForm(); err != nil {
		return ""
	}
	return r.PostForm.Get(key)
}

// writeAck answers Slack: an empty 200, or the JSON response (a
// view_submission response_action, a slash command's ephemeral text).
func writeAck(w http.ResponseWriter, resp any) {
	if resp == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
