package bot

import "github.com/slackgate/slackgate/bot/approvalapi"

// storeFailure puts a failed store call into words, the same for a
// person in Slack as for an API client (approvalapi.StoreFailure).
var storeFailure = approvalapi.StoreFailure

// sorry is what a person in Slack reads when the store failed while the
// bot tried to do what for them ("start a session").
func sorry(what string, err error) string {
	_, reason := storeFailure(err)
	return "Sorry, I could not " + what + " (" + reason + "). Please try again."
}
