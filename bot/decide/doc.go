// Package decide is the one path by which a bot settles a request.
//
// Every decision a bot makes, whoever it names, is signed and stored here.
//
// A person's click, a policy rule, a grant and a remembered answer each
// settle a request the same way: Settle signs the decision over the
// request as it was loaded (the worker verifies it over the request as it
// created it, so one rewritten in the store meanwhile is refused there)
// and passes it to the store's Decide, which settles a request exactly
// once and hands the loser of a race the winning request.
//
// Standing settles a request without a card when a rule, a grant or a
// remembered answer stands for a person's tap, in one order (standing.go),
// before the bot claims the request's card: so "why did this run without
// a card" is answered here, and the bot only puts the one line in the
// thread that says so. Each decision names its decider (store.Decider).
//
// Who may decide a request is answered here too (who.go): May applies
// the policy's ask (its approvers, not_self, an escalation) with what the
// bot knows of people (People), and Approve counts one approval of
// several, each person once and only those a bot signed.
//
// The package holds no Slack client and no bot: it takes a narrow store
// (Store), the signing key, the clock and the policy applied now, and the
// bot wires it in New.
package decide
