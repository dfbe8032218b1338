package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// RememberedQuestion is one question of a remembered form, as far as it
// decides the form's fingerprint.
type RememberedQuestion struct {
	Header      string   `json:"header,omitempty"`
	Question    string   `json:"question"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
	Options     []string `json:"options"` // the option labels, in order
}

// QuestionFingerprint identifies a question form: the tool, and each
// question's header, text, whether it takes several answers and its option
// labels in order. Descriptions are left out (rewording one does not
// change what is asked); anything else changed is another question. It
// also returns the questions it covered. It fails for an input that is not
// a form with at least one question.
func QuestionFingerprint(tool string, input json.RawMessage) (string, []RememberedQuestion, error) {
	var in struct {
		Questions []struct {
			Question    string `json:"question"`
			Header      string `json:"header"`
			MultiSelect bool   `json:"multiSelect"`
			Options     []struct {
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(input, &in); err != nil || len(in.Questions) == 0 {
		return "", nil, invalid("input of %s is not a question form", tool)
	}
	qs := make([]RememberedQuestion, len(in.Questions))
	for i, q := range in.Questions {
		qs[i] = RememberedQuestion{Header: q.Header, Question: q.Question, MultiSelect: q.MultiSelect, Options: []string{}}
		for _, o := range q.Options {
			qs[i].Options = append(qs[i].Options, o.Label)
		}
	}
	canon, err := json.Marshal(struct {
		Tool      string               `json:"tool"`
		Questions []RememberedQuestion `json:"questions"`
	}{tool, qs})
	if err != nil {
		return "", nil, fmt.Errorf("store: fingerprint of %s: %w", tool, err)
	}
	sum := sha256.Sum256(append([]byte("slackgate question v1\n"), canon...))
	return hex.EncodeToString(sum[:]), qs, nil
}
