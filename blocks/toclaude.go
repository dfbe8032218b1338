package blocks

// What a person's decision tells Claude, in one place: relay only passes a
// decision's message on (and keeps a neutral fallback of its own), so the
// words Claude reads about Slack are all here.

// SkipMessage is the deny message Claude gets when a person skips a question.
// The card tells a skip from a deny by Decision.Skipped, not by this text.
const SkipMessage = "User skipped this question"

// deniedMessage is what Claude reads when a person denies without a reason.
func deniedMessage(by Who) string { return "Denied in Slack by " + orName(by) + "." }
