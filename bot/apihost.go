package bot

import (
	"context"
	"fmt"
	"net/http"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/bot/decide"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/store"
)

// The approval API is package approvalapi's Server; the bot builds it
// with API_TOKENS, routes /v1 to it, runs its expiry sweeper, and lends it
// what it needs of Slack and the store through apiHost.

// apiSessionPrefix starts the store id of every API session.
const apiSessionPrefix = approvalapi.SessionPrefix

// isAPISession reports whether a session was opened by the approval API.
func isAPISession(id string) bool { return approvalapi.IsSession(id) }

// elsewhereText answers a thread reply in an API session's thread.
const elsewhereText = "This Claude session runs elsewhere (in a terminal or a job, through the approval API): messages here do not reach it. Answer its cards here; talk to it where it runs."

// elsewhere tells user that an API session cannot be talked to from Slack
// and reports whether s is one; followUp calls it before queueing anything.
func (b *Bot) elsewhere(ctx context.Context, s store.Session, user string) bool {
	if !isAPISession(s.ID) {
		return false
	}
	b.ephemerals.tell(ctx, s.Thread, user, elsewhereText)
	return true
}

// apiHost is the Slack side the approval API's server needs: the outbox
// for a thread's root and a tool run's line, the Slack client for a DM
// token's conversation, and the store to settle what no person decided.
type apiHost struct {
	settle *decide.Decider
	out    *outbox.Outbox
	api    *slack.Client
}

var _ approvalapi.Host = apiHost{}

// newAPIServer is the approval API of cfg's tokens (nil: none).
func newAPIServer(cfg Config, st Store, settle *decide.Decider, out *outbox.Outbox, api *slack.Client, log zerolog.Logger) *approvalapi.Server {
	if len(cfg.APITokens) == 0 {
		return nil
	}
	return approvalapi.NewServer(approvalapi.ServerConfig{
		Tokens: cfg.APITokens, Limits: cfg.APILimits, SigningKey: cfg.SigningKey, Sweep: cfg.ReconcileInterval, Clock: cfg.Clock,
	}, st, apiHost{settle: settle, out: out, api: api}, log)
}

// OpenThread posts a new API session's root where tok's threads go.
func (h apiHost) OpenThread(ctx context.Context, log zerolog.Logger, tok approvalapi.Token, from approvalapi.Session) (store.MessageRef, error) {
	channel, err := h.channel(ctx, tok)
	if err != nil {
		return store.MessageRef{}, err
	}
	root := blocks.APISessionRoot(tok.Name, from.Host, from.Cwd, from.Name)
	ts, err := h.out.Post(log, outbox.LaneResult, channel, "", outbox.Msg{Text: root.Text, Blocks: root.Blocks}).Outcome()
	if err != nil {
		return store.MessageRef{}, fmt.Errorf("bot: post api session root in %s: %w", channel, err)
	}
	return store.MessageRef{Channel: channel, TS: ts}, nil
}

// channel is where tok's session threads go: its channel, or the DM
// with its owner, opened (or found) with conversations.open.
func (h apiHost) channel(ctx context.Context, tok approvalapi.Token) (string, error) {
	if tok.User == "" {
		return tok.Channel, nil
	}
	ch, _, _, err := h.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{tok.User}})
	if err != nil {
		return "", fmt.Errorf("bot: open a DM with %s for api token %s (the app needs im:write): %w", tok.User, tok.Name, err)
	}
	return ch.ID, nil
}

// ToolRan queues a reported tool run's line in its session's thread.
func (h apiHost) ToolRan(log zerolog.Logger, thread store.MessageRef, tok approvalapi.Token, ran approvalapi.ToolRan) {
	m := blocks.ToolRanMessage(ran.ToolName, ran.Input, ran.Failed, ran.Error, tok.Name)
	h.out.PostLater(log, outbox.LaneResult, thread.Channel, thread.TS, outbox.Msg{Text: m.Text, Blocks: m.Blocks})
}

// Settle settles a request no person decided (withdrawn, expired),
// through bot/decide; the request_settled event shows it on the card.
func (h apiHost) Settle(ctx context.Context, id string, d store.Decision) (store.Request, error) {
	return h.settle.SettleUnsigned(ctx, id, d)
}

// apiHandler is what Socket Mode serves on HTTPAddr: the API and a health
// check, none of the Slack routes (they need HTTP mode's signing secret).
func apiHandler(srv *approvalapi.Server) http.Handler {
	mux := http.NewServeMux()
	srv.Mount(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
