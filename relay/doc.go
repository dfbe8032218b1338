// Package relay is the Claude Code side of slackgate: the stream-json wire
// codec, one claude process per session, and the worker that bridges its
// control requests to the store and the store's decisions back to Claude.
package relay
