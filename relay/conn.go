package relay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

// Causes of a can_use_tool handler's context ending (context.Cause).
var (
	// ErrWithdrawn: the CLI sent control_cancel_request for the request
	// (an interrupt, a sibling deny+interrupt, a hook answered first).
	ErrWithdrawn = errors.New("relay: request withdrawn by Claude")
	// ErrStreamClosed: the CLI's stdout ended (the process exited).
	ErrStreamClosed = errors.New("relay: claude output closed")
)

// PermissionModes are the modes set_permission_mode and --permission-mode
// accept. The 2.1.197 CLI accepts any string, so the host validates.
var PermissionModes = []string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto"}

// ErrBadMode: a permission mode not in PermissionModes.
var ErrBadMode = errors.New("unknown permission mode")

// ValidMode returns nil for a known permission mode.
func ValidMode(mode string) error {
	if !slices.Contains(PermissionModes, mode) {
		return fmt.Errorf("relay: permission mode %q (want one of %v): %w", mode, PermissionModes, ErrBadMode)
	}
	return nil
}

// maxLogLine bounds how much of a bad line reaches the log.
const maxLogLine = 200

// ConnHandlers receive what a Conn reads.
type ConnHandlers struct {
	// OnMessage gets every line that is not control traffic, in stdout
	// order, on the reader goroutine (it holds up reading while it runs).
	OnMessage func(ctx context.Context, m Message)
	// OnCanUseTool decides one can_use_tool request. Each request runs in
	// its own goroutine, owned by the Conn, so several can be pending at
	// once. ctx ends when the CLI withdraws the request (cause ErrWithdrawn)
	// or its output closes (cause ErrStreamClosed); after that nothing is
	// sent whatever it returns. ok=false sends nothing.
	OnCanUseTool func(ctx context.Context, requestID string, req CanUseTool) (res PermissionResult, ok bool)
	// OnElicitation answers one elicitation (an MCP server asks the user
	// for input), in its own goroutine like OnCanUseTool, with the same
	// withdrawal and ok=false rules. Nil: elicitations are answered with
	// an error, which the CLI takes as a cancel.
	OnElicitation func(ctx context.Context, requestID string, req Elicitation) (res ElicitResult, ok bool)
}

// Stats counts what a Conn has read.
type Stats struct {
	Lines     int64 // lines read
	Malformed int64 // lines that were not valid messages (logged, skipped)
	Unknown   int64 // valid lines of a type the host does not know
}

// Conn speaks the stream-json control protocol over the CLI's stdout and
// stdin. It knows nothing of processes, so tests drive it over io.Pipe
// with an in-process fake CLI.
type Conn struct {
	stdout   io.Reader
	enc      *Encoder
	handlers ConnHandlers
	log      zerolog.Logger

	mu       sync.Mutex
	tools    map[string]context.CancelCauseFunc // pending can_use_tool by CLI request_id
	host     map[string]chan ControlResponseInner
	closed   bool
	closedCh chan struct{}

	lines, malformed, unknown atomic.Int64
	wg                        sync.WaitGroup
}

// NewConn reads messages from r and writes to w.
func NewConn(r io.Reader, w io.Writer, h ConnHandlers, log zerolog.Logger) *Conn {
	return &Conn{
		stdout: r, enc: NewEncoder(w), handlers: h, log: log,
		tools:    make(map[string]context.CancelCauseFunc),
		host:     make(map[string]chan ControlResponseInner),
		closedCh: make(chan struct{}),
	}
}

// Stats returns the counters so far.
func (c *Conn) Stats() Stats {
	return Stats{Lines: c.lines.Load(), Malformed: c.malformed.Load(), Unknown: c.unknown.Load()}
}

// Done is closed once the output has ended.
func (c *Conn) Done() <-chan struct{} { return c.closedCh }

// Run reads until r ends, dispatching each line, then ends every pending
// request, waits for their goroutines and returns. It returns nil at EOF and
// the read error otherwise; to stop it, close r.
func (c *Conn) Run(ctx context.Context) error {
	// A small buffer: it is held for the process's whole life, and
	// ReadBytes grows a line beyond it as needed.
	br := bufio.NewReaderSize(c.stdout, outputBuffer)
	var readErr error
	for {
		// ReadBytes has no line limit: tool results can be megabytes long.
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.dispatch(ctx, line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = fmt.Errorf("relay: read: %w", err)
			}
			break
		}
	}
	c.mu.Lock()
	c.closed = true
	for id, cancel := range c.tools {
		cancel(ErrStreamClosed)
		delete(c.tools, id)
	}
	close(c.closedCh)
	c.mu.Unlock()
	c.wg.Wait()
	return readErr
}

func (c *Conn) dispatch(ctx context.Context, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	c.lines.Add(1)
	m, err := DecodeLine(line)
	if err != nil {
		c.malformed.Add(1)
		c.log.Warn().Err(err).Str("line", truncate(line, maxLogLine)).Msg("skipping malformed line from claude")
		if m.ControlRequest != nil && m.ControlRequest.RequestID != "" {
			// Answer so the CLI does not wait forever on a request we cannot read.
			c.writeError(m.ControlRequest.RequestID, "Malformed control request: "+err.Error())
		}
		return
	}
	switch {
	case m.ControlRequest != nil:
		c.onControlRequest(ctx, m.ControlRequest)
	case m.ControlResponse != nil:
		c.onControlResponse(m.ControlResponse.Response)
	case m.ControlCancel != nil:
		c.onCancel(m.ControlCancel.RequestID)
	case m.Type == TypeKeepAlive:
	default:
		if !m.Known() {
			c.unknown.Add(1)
			c.log.Debug().Str("type", m.Type).Str("subtype", m.Subtype).Msg("unknown message type from claude")
		}
		if c.handlers.OnMessage != nil {
			c.handlers.OnMessage(ctx, m)
		}
	}
}

func (c *Conn) onControlRequest(ctx context.Context, cr *ControlRequest) {
	id := cr.RequestID
	switch {
	case cr.Subtype == SubtypeCanUseTool && c.handlers.OnCanUseTool != nil:
		req := *cr.CanUseTool
		c.serve(ctx, id, "can_use_tool", func(rctx context.Context) (func() error, bool) {
			res, ok := c.handlers.OnCanUseTool(rctx, id, req)
			return func() error { return c.enc.WritePermission(id, res) }, ok
		})
	case cr.Subtype == SubtypeElicitation && c.handlers.OnElicitation != nil:
		req := *cr.Elicitation
		c.serve(ctx, id, "elicitation", func(rctx context.Context) (func() error, bool) {
			res, ok := c.handlers.OnElicitation(rctx, id, req)
			return func() error { return c.enc.WriteElicitResult(id, res) }, ok
		})
	default:
		c.log.Debug().Str("subtype", cr.Subtype).Str("cli_request_id", id).Msg("unsupported control request from claude")
		c.writeError(id, "Unsupported control request subtype: "+cr.Subtype)
	}
}

// serve runs handle for the CLI's request id in a goroutine the Conn owns,
// with a context that ends when the CLI withdraws the request or its
// output closes; then the answer handle returns is written, unless the
// request is no longer live or ok is false.
func (c *Conn) serve(ctx context.Context, id, what string, handle func(context.Context) (answer func() error, ok bool)) {
	c.mu.Lock()
	if _, dup := c.tools[id]; dup || c.closed {
		c.mu.Unlock()
		c.log.Warn().Str("cli_request_id", id).Str("subtype", what).Msg("ignoring duplicate control request")
		return
	}
	rctx, cancel := context.WithCancelCause(ctx)
	c.tools[id] = cancel
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer cancel(nil)
		answer, ok := handle(rctx)
		c.mu.Lock()
		_, live := c.tools[id]
		delete(c.tools, id)
		c.mu.Unlock()
		// A withdrawn request, or one whose process is gone, gets no reply:
		// the CLI has moved on and a late answer would at best be ignored.
		if !ok || !live {
			return
		}
		if err := answer(); err != nil {
			c.log.Error().Err(err).Str("cli_request_id", id).Str("subtype", what).Msg("cannot answer control request")
			if errors.Is(err, ErrInvalidResult) {
				c.writeError(id, "slackgate could not build a valid answer: "+err.Error())
			}
		}
	}()
}

func (c *Conn) onCancel(id string) {
	c.mu.Lock()
	cancel, ok := c.tools[id]
	delete(c.tools, id)
	c.mu.Unlock()
	if ok {
		cancel(ErrWithdrawn)
	}
}

func (c *Conn) onControlResponse(r ControlResponseInner) {
	c.mu.Lock()
	ch, ok := c.host[r.RequestID]
	delete(c.host, r.RequestID)
	c.mu.Unlock()
	if !ok {
		c.log.Debug().Str("cli_request_id", r.RequestID).Msg("control_response for no pending host request")
		return
	}
	ch <- r // buffered
}

func (c *Conn) writeError(id, msg string) {
	if err := c.enc.WriteError(id, msg); err != nil {
		c.log.Error().Err(err).Str("cli_request_id", id).Msg("cannot write control error")
	}
}

// Send writes a user message. Messages sent while a turn runs are folded
// into it or queued for the next one by the CLI.
func (c *Conn) Send(ctx context.Context, text string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.enc.WriteUser(text)
}

// Interrupt aborts the current turn; pending requests are withdrawn by the
// CLI. It waits for the CLI's acknowledgement.
func (c *Conn) Interrupt(ctx context.Context) error {
	_, err := c.request(ctx, SubtypeInterrupt, func(id string) error { return c.enc.WriteInterrupt(id) })
	return err
}

// SetPermissionMode switches the live session's permission mode.
func (c *Conn) SetPermissionMode(ctx context.Context, mode string) error {
	if err := ValidMode(mode); err != nil {
		return err
	}
	_, err := c.request(ctx, SubtypeSetPermissionMode, func(id string) error { return c.enc.WriteSetPermissionMode(id, mode) })
	return err
}

// ErrClaudeError: the CLI answered a host request with an error.
var ErrClaudeError = errors.New("claude refused the request")

func (c *Conn) request(ctx context.Context, what string, write func(id string) error) (ControlResponseInner, error) {
	id := "req_" + uuid.NewString()
	ch := make(chan ControlResponseInner, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ControlResponseInner{}, fmt.Errorf("relay: %s: %w", what, ErrStreamClosed)
	}
	c.host[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.host, id)
		c.mu.Unlock()
	}
	if err := write(id); err != nil {
		forget()
		return ControlResponseInner{}, fmt.Errorf("relay: %s: %w", what, err)
	}
	select {
	case r := <-ch:
		if r.Subtype == SubtypeError {
			return r, fmt.Errorf("relay: %s: %w: %s", what, ErrClaudeError, r.Error)
		}
		return r, nil
	case <-c.closedCh:
		forget()
		return ControlResponseInner{}, fmt.Errorf("relay: %s: %w", what, ErrStreamClosed)
	case <-ctx.Done():
		forget()
		return ControlResponseInner{}, fmt.Errorf("relay: %s: %w", what, ctx.Err())
	}
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
