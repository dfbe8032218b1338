package auditsink

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// The webhook's wire format and its receiver's side are in the package doc.
const (
	// MinSecretBytes is the shortest AUDIT_WEBHOOK_SECRET taken: 256 bits,
	// the size of the HMAC's hash.
	MinSecretBytes = 32
	// RequestTimeout bounds one POST, the receiver's answer included.
	RequestTimeout = 10 * time.Second
	// Backoff between attempts at one entry: doubling from backoffBase
	// up to backoffMax, each wait jittered over its upper half.
	backoffBase = time.Second
	backoffMax  = 5 * time.Minute
	// maxRetryAfter bounds the wait a receiver's Retry-After may ask for.
	maxRetryAfter = 15 * time.Minute
	// Headers of a delivery.
	HeaderSignature = "X-Slackgate-Signature"
	HeaderTimestamp = "X-Slackgate-Timestamp"
	HeaderKey       = "Idempotency-Key"
)

// WebhookConfig configures a Webhook.
type WebhookConfig struct {
	// URL receives the POSTs (CheckWebhookURL); Secret keys their
	// signatures (CheckWebhookSecret).
	URL    string
	Secret string
	// Transport carries the requests (nil: http.DefaultTransport). No
	// redirect is followed, whatever it is.
	Transport http.RoundTripper
	// Clock times the backoff (nil: the wall clock).
	Clock store.Clock
	Log   zerolog.Logger
}

// CheckWebhookURL accepts an absolute https URL, or http to a loopback
// host (a log shipper beside slackgate): the signature proves who sent an
// entry, not that nobody on the way read it.
func CheckWebhookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, whose query may hold a token
		}
		return fmt.Errorf("not a URL: %w", err)
	}
	host := u.Hostname()
	switch {
	case u.Host == "" || host == "":
		return errors.New("not an absolute URL with a host (https://logs.example.com/slackgate)")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopback(host):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("http to %s would send the audit trail in the clear: use https (plain http only to a loopback address)", host)
	}
	return fmt.Errorf("scheme %q: want https", u.Scheme)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckWebhookSecret accepts a secret of at least MinSecretBytes bytes.
func CheckWebhookSecret(secret string) error {
	if len(secret) < MinSecretBytes {
		return fmt.Errorf("%d bytes; at least %d are needed (openssl rand -hex 32)", len(secret), MinSecretBytes)
	}
	return nil
}

// Webhook is the Sink that POSTs each entry to a URL (see the package doc).
type Webhook struct {
	url    string
	host   string // what the log names of the URL (its query may hold a token)
	secret []byte
	client *http.Client
	clock  store.Clock
	log    zerolog.Logger
}

// NewWebhook checks cfg and returns its Webhook.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	if err := CheckWebhookURL(cfg.URL); err != nil {
		return nil, fmt.Errorf("auditsink: webhook URL: %w", err)
	}
	if err := CheckWebhookSecret(cfg.Secret); err != nil {
		return nil, fmt.Errorf("auditsink: webhook secret: %w", err)
	}
	u, _ := url.Parse(cfg.URL)
	w := &Webhook{url: cfg.URL, host: u.Host, secret: []byte(cfg.Secret), clock: cfg.Clock, log: cfg.Log,
		client: &http.Client{Transport: cfg.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if w.clock == nil {
		w.clock = store.WallClock{}
	}
	return w, nil
}

// Begin implements Sink: a webhook never started delivers from the oldest
// entry the store keeps, so the receiver gets the whole trail.
func (w *Webhook) Begin(_ context.Context, s store.AuditSink) (store.AuditCursor, error) {
	return s.Cursor, nil
}

// Deliver implements Sink: it POSTs page[0] until the receiver takes it.
func (w *Webhook) Deliver(ctx context.Context, page []store.AuditEntry, keep func(context.Context) error) (int, string, error) {
	e := page[0]
	key := e.Hash
	if key == "" {
		key = e.ID
	}
	log := w.log.With().Str("entry", e.ID).Uint64("seq", e.Seq).Logger()
	if err := w.deliver(ctx, store.AuditEntryRecord{Record: store.AuditRecordEntry, AuditEntry: e}, key, log, keep); err != nil {
		return 0, "", err
	}
	return 1, "", nil
}

// Seal implements Sink: it POSTs the checkpoint until the receiver takes
// it, keyed by its digest.
func (w *Webhook) Seal(ctx context.Context, cp store.AuditCheckpoint, keep func(context.Context) error) (string, error) {
	log := w.log.With().Uint64("checkpoint_seq", cp.Seq).Logger()
	rec := store.AuditCheckpointRecord{Record: store.AuditRecordCheckpoint, AuditCheckpoint: cp}
	return "", w.deliver(ctx, rec, "checkpoint-"+store.AuditCheckpointDigest(cp), log, keep)
}

// deliver POSTs record as JSON until the receiver takes it, retrying with
// backoff; before each retry it calls keep.
func (w *Webhook) deliver(ctx context.Context, record any, key string, log zerolog.Logger, keep func(context.Context) error) error {
	body, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	log = log.With().Str("webhook", w.host).Logger()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := keep(ctx); err != nil {
				return err
			}
		}
		status, retryAfter, err := w.post(ctx, body, key)
		if err == nil {
			if attempt > 0 {
				log.Info().Int("attempts", attempt+1).Msg("audit webhook: delivered after retrying")
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := backoff(attempt, retryAfter)
		ev := log.Warn()
		if status >= 300 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests {
			ev = log.Error().Str("fix", "a wrong AUDIT_WEBHOOK_URL or AUDIT_WEBHOOK_SECRET, or a receiver refusing slackgate's entries: the audit trail waits at this entry until it is taken")
		}
		ev.Err(err).Int("status", status).Int("attempt", attempt+1).Dur("retry_in", wait).Msg("audit webhook: not delivered")
		if err := store.Sleep(ctx, w.clock, wait); err != nil {
			return err
		}
	}
}

// post sends one delivery of body. It returns nil for a 2xx answer, else
// the status (0 when none came) and a Retry-After the receiver asked for.
func (w *Webhook) post(ctx context.Context, body []byte, key string) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	ts := strconv.FormatInt(w.clock.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "slackgate-audit/1")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sign(w.secret, ts, body))
	req.Header.Set(HeaderKey, key)
	resp, err := w.client.Do(req)
	if err != nil {
		// The URL's query is not logged: it may carry a token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, nil
	}
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After"), w.clock.Now()), fmt.Errorf("receiver answered %s", resp.Status)
}

// sign is the signature header's value: "sha256=" and the hex HMAC-SHA256
// of timestamp, ".", body.
func sign(secret []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// backoff is the wait before attempt+1: exponential with jitter over the
// upper half, or what the receiver asked for when that is longer.
func backoff(attempt int, asked time.Duration) time.Duration {
	d := min(backoffBase<<min(attempt, 20), backoffMax)
	d = d/2 + rand.N(d/2+1)
	return max(d, min(asked, maxRetryAfter))
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
