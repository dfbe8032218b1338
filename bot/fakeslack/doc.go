// Package fakeslack is an in-process Slack for tests that enforces Slack's limits and rate model.
//
// It serves the Web API methods the bot calls and delivers events over
// Socket Mode and HTTP, checks every message and view against Slack's
// limits, and has helpers that act as a person (mention, click, select,
// submit a modal).
//
// It validates what the bot sends with blocks' validator, the same law the
// renderers are tested against, and records every call so tests assert on
// what a workspace would have shown. Its scope is the Web API methods and
// deliveries the bot uses, not all of Slack. It is test code: nothing
// outside tests imports it.
//
// It fakes only what slackgate uses, so that what it fakes is faked well:
// auth.test, users.info, usergroups.users.list, chat.postMessage,
// chat.update, a click's response_url (responseurl.go), chat.postEphemeral, views.open (one modal per person; a
// submission is answered with errors or closes it; ClickView presses a
// button in it), views.update, views.publish, the two-step file
// upload (files.getUploadURLExternal, files.completeUploadExternal),
// conversations.replies (a thread, paged), conversations.history (a
// channel's top-level messages, newest first, paged) and
// apps.connections.open. Any
// other method answers unknown_method, which fails the test: a new call in
// the bot needs its fake here first.
//
// People are of the fake's team unless AddExternalUser makes them someone
// of another workspace and organization, as Slack Connect shows them: their
// events carry user_team and source_team, their clicks, modals and
// commands name their team, and users.info answers with it.
package fakeslack
