package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// healthCheck is one dependency /readyz asks about, or one note: a note
// that fails is named under "notes" and leaves the process ready, for
// what an operator should look at that restarting or routing around this
// process would not mend (an audit sink's backlog).
type healthCheck struct {
	name  string
	ready func(ctx context.Context) error
}

const (
	// readyTimeout bounds each readiness check, so a hung store makes the
	// probe answer "not ready" rather than time out the prober.
	readyTimeout = 2 * time.Second
	// opsShutdown bounds how long a scrape in flight may hold up a stop.
	opsShutdown = 5 * time.Second
)

// readiness is /readyz's body.
type readiness struct {
	Ready bool     `json:"ready"`
	Down  []string `json:"down,omitempty"`  // the names of the checks that failed
	Notes []string `json:"notes,omitempty"` // the names of the notes that apply
}

// opsHandler serves GET /healthz (the process answers), GET /readyz (every
// check passes, else 503 naming what is down; notes that apply are named,
// still 200) and, when given, GET /metrics.
// Whoever reaches the port (a command Claude runs, on the same host) learns
// only names: why a check failed goes to log, once when it starts failing.
func opsHandler(checks []healthCheck, metrics http.Handler, log zerolog.Logger, notes ...healthCheck) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", readyz(checks, notes, log))
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return mux
}

// readyz runs every check and answers 200, or 503 naming the ones that
// failed. A check's error is logged when it starts failing, and its
// recovery when it passes again, not at every probe.
func readyz(checks, notes []healthCheck, log zerolog.Logger) http.HandlerFunc {
	var mu sync.Mutex
	failing := map[string]bool{}
	return func(w http.ResponseWriter, r *http.Request) {
		res := readiness{Ready: true}
		for i, c := range append(slices.Clip(checks), notes...) {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			err := c.ready(ctx)
			cancel()
			switch {
			case err != nil && i >= len(checks):
				res.Notes = append(res.Notes, c.name)
			case err != nil:
				res.Ready, res.Down = false, append(res.Down, c.name)
			}
			mu.Lock()
			was := failing[c.name]
			failing[c.name] = err != nil
			mu.Unlock()
			what := "readiness check"
			if i >= len(checks) {
				what = "readiness note"
			}
			switch {
			case err != nil && !was:
				log.Warn().Err(err).Str("check", c.name).Msg(what + " failing")
			case err == nil && was:
				log.Info().Str("check", c.name).Msg(what + " passing again")
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if !res.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(res)
	}
}

// storeReady is the store check: one cheap read of a request that does not
// exist. Not found is the healthy answer.
func storeReady(st store.Store) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := st.GetRequest(ctx, "readyz-probe")
		if err == nil || errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
}

// opsListener listens on HEALTH_ADDR, or returns the test's listener; nil
// when HEALTH_ADDR is "off".
func (p program) opsListener(cfg Config) (net.Listener, error) {
	if p.healthListener != nil {
		return p.healthListener, nil
	}
	if cfg.HealthAddr == "off" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.HealthAddr)
	if err != nil {
		return nil, fmt.Errorf("HEALTH_ADDR=%s: %w", cfg.HealthAddr, err)
	}
	return ln, nil
}

// serveOps serves h on ln until ctx ends, then lets requests in flight
// finish (bounded by opsShutdown).
func serveOps(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("HEALTH_ADDR: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opsShutdown)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	if err != nil {
		return fmt.Errorf("HEALTH_ADDR: stopping: %w", err)
	}
	return nil
}
