package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"
)

// A request's card is one Slack message that any bot replica may post,
// and whose outcome a click's response_url or an edit may show. Slack has
// no idempotent write, so the replicas agree on who writes what through
// the request's record: CardState, changed only by MoveCard, one named
// step at a time. It dedups Slack writes and decides nothing (the package
// doc says what a store writer can do with it).

// CardStep is one transition of a request's card.
type CardStep string

const (
	// CardClaimed: the caller posts the card. Taken while no claim is
	// live, the claim then stands for CardMove.TTL by the store's clock;
	// one whose holder died lapses, and another poster may take it.
	CardClaimed CardStep = "claimed"
	// CardClicked: a click will show the outcome of the decision it is
	// about to make (CardMove.Decision) through its response_url, so the
	// settled event leaves the card to it. Recorded before the decision,
	// while the request is pending.
	CardClicked CardStep = "clicked"
	// CardShownByClick: the click's response_url showed the decision's
	// outcome; nobody edits the card for it.
	CardShownByClick CardStep = "shown_by_click"
	// CardClickFailed: the click's response_url refused the outcome; the
	// settled event edits the card.
	CardClickFailed CardStep = "click_failed"
	// CardInputAttached: the input a person edited before approving was
	// attached to the card's thread, once.
	CardInputAttached CardStep = "input_attached"
	// CardAnnounced: the caller posts the card's copies where approvers
	// look (bot's reach), once.
	CardAnnounced CardStep = "announced"
)

// CardMove is one step MoveCard makes.
type CardMove struct {
	Step CardStep `json:"step"`
	// TTL is how long a CardClaimed claim stands.
	TTL time.Duration `json:"ttl,omitempty"`
	// Decision names the decision a click step is about (DecisionDigest).
	Decision string `json:"decision,omitempty"`
}

// Validate checks m as MoveCard takes it: a known step, a TTL only and
// always for a claim, a decision's digest only and always for a click's
// steps.
func (m CardMove) Validate() error {
	click := m.Step == CardClicked || m.Step == CardShownByClick || m.Step == CardClickFailed
	switch {
	case !click && m.Step != CardClaimed && m.Step != CardInputAttached && m.Step != CardAnnounced:
		return invalid("unknown card step %q", m.Step)
	case (m.Step == CardClaimed) != (m.TTL > 0):
		return invalid("card step %s with ttl %v; a claim, and only a claim, has a positive ttl", m.Step, m.TTL)
	case click != validDigest(m.Decision):
		return invalid("card step %s naming decision %q; a click's steps, and only they, name one by its DecisionDigest", m.Step, m.Decision)
	}
	return nil
}

// CardState is how a request's card fares in Slack, as far as the bots
// that write it must agree.
type CardState struct {
	// ClaimedUntil is when the last claim to post the card lapses (zero:
	// never claimed).
	ClaimedUntil time.Time `json:"claimed_until,omitzero"`
	// Clicks are the decisions clicks claimed to show (CardClicked), each
	// once, oldest first: at most one of them settled the request.
	Clicks []string `json:"clicks,omitempty"`
	// Shown is how the click's outcome went, and for which decision: zero
	// until the click says.
	Shown CardShown `json:"shown,omitzero"`
	// InputAttached: the input a person edited is in the thread.
	InputAttached bool `json:"input_attached,omitempty"`
	// Announced: a bot took the card's copies on.
	Announced bool `json:"announced,omitempty"`
}

// CardShown is how a click's response_url took the outcome of Decision:
// By is CardShownByClick or CardClickFailed.
type CardShown struct {
	By       CardStep `json:"by"`
	Decision string   `json:"decision"`
}

// IsZero reports whether nothing happened to the card yet.
func (c CardState) IsZero() bool {
	return c.ClaimedUntil.IsZero() && len(c.Clicks) == 0 && c.Shown == (CardShown{}) && !c.InputAttached && !c.Announced
}

// Clicked reports whether a click claimed to show decision (a
// DecisionDigest).
func (c CardState) Clicked(decision string) bool {
	return decision != "" && slices.Contains(c.Clicks, decision)
}

// ShownBy says how the click's outcome of decision went: CardShownByClick,
// CardClickFailed, or "" while the click has not said.
func (c CardState) ShownBy(decision string) CardStep {
	if decision == "" || c.Shown.Decision != decision {
		return ""
	}
	return c.Shown.By
}

// Apply makes m on c, a card of a request pending or not, at now by the
// store's clock, and reports whether it took (the backends' one rule of
// what a step changes; Cards.MoveCard says when each takes).
func (c *CardState) Apply(m CardMove, pending bool, now time.Time) bool {
	switch m.Step {
	case CardClaimed:
		if c.ClaimedUntil.After(now) {
			return false
		}
		c.ClaimedUntil = now.Add(m.TTL)
	case CardClicked:
		if !pending {
			return false
		}
		if !slices.Contains(c.Clicks, m.Decision) {
			c.Clicks = append(c.Clicks, m.Decision)
		}
	case CardShownByClick, CardClickFailed:
		if c.Shown != (CardShown{}) {
			return false
		}
		c.Shown = CardShown{By: m.Step, Decision: m.Decision}
	case CardInputAttached:
		if c.InputAttached {
			return false
		}
		c.InputAttached = true
	case CardAnnounced:
		if c.Announced {
			return false
		}
		c.Announced = true
	}
	return true
}

// digestLen is the length of a DecisionDigest: 12 bytes in hex.
const digestLen = 24

// DecisionDigest names signed decision d in a card's state: 12 bytes of
// the SHA-256 of its signature, in hex; "" for an unsigned decision, which
// no click made. Only a decision signed with the bot's key has one that a
// click could have claimed, and Decide settles one per request.
func DecisionDigest(d Decision) string {
	if len(d.Signature) == 0 {
		return ""
	}
	sum := sha256.Sum256(d.Signature)
	return hex.EncodeToString(sum[:digestLen/2])
}

// validDigest reports whether s is shaped like a DecisionDigest.
func validDigest(s string) bool {
	if len(s) != digestLen {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// Cards changes a request's CardState, one step at a time.
type Cards interface {
	// MoveCard makes m on request id's card and reports whether it took:
	// CardClaimed while no claim is live (it then stands m.TTL), CardClicked
	// while the request is pending (a decision clicked twice is recorded
	// once), CardShownByClick and CardClickFailed while no click said how
	// its outcome went, CardInputAttached and CardAnnounced the first time. Of concurrent
	// callers with one step that can take once, across processes too,
	// exactly one sees true. ErrNotFound for an unknown id; ErrInvalid when
	// m fails Validate.
	MoveCard(ctx context.Context, id string, m CardMove) (bool, error)
}
