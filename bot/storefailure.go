package bot

import (
	"context"
	"errors"
	"net/http"

	"github.com/slackgate/slackgate/store"
)

// storeFailure is the one place a failed store call becomes words: the
// HTTP status an approval API call answers with, and the reason a person
// reads, in Slack or from the API's error.
func storeFailure(err error) (status int, reason string) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "it is no longer in the store"
	case errors.Is(err, store.ErrInvalid):
		return http.StatusBadRequest, "the store refused it as invalid"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the store did not answer in time"
	}
	return http.StatusServiceUnavailable, "the store is unavailable"
}

// sorry is what a person in Slack reads when the store failed while the
// bot tried to do what for them ("start a session").
func sorry(what string, err error) string {
	_, reason := storeFailure(err)
	return "Sorry, I could not " + what + " (" + reason + "). Please try again."
}
