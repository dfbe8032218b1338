package fakeslack

import (
	"encoding/json"
	"testing"
)

// The frame is written out by hand; it must be byte for byte what
// json.Marshal made of the frame as a map.
func TestEnvelopeFrameIsWhatMarshalWrites(t *testing.T) {
	payload, _ := json.Marshal(map[string]any{"type": "block_actions", "text": "<b> & \u2028 ünï", "n": 1.5, "list": []any{nil, true}})
	for _, tt := range []struct {
		d       delivery
		attempt int
	}{
		{delivery{typ: TypeInteractive, payload: payload}, 0},
		{delivery{typ: TypeSlashCommands, payload: payload}, 1},
		{delivery{typ: TypeEventsAPI, payload: payload}, 0},
		{delivery{typ: TypeEventsAPI, payload: payload, retryNum: 2, retryReason: `time<out> "&" é`}, 1},
		{delivery{typ: TypeInteractive}, 0},
	} {
		id := "0000002a-fake-0042-envelope"
		frame := map[string]any{
			"envelope_id":              id,
			"type":                     tt.d.typ,
			"payload":                  json.RawMessage(tt.d.payload),
			"accepts_response_payload": tt.d.typ != TypeEventsAPI,
		}
		if tt.d.typ == TypeEventsAPI {
			frame["retry_attempt"] = tt.d.retryNum + tt.attempt
			frame["retry_reason"] = tt.d.retryReason
		}
		want, err := json.Marshal(frame)
		if err != nil {
			t.Fatal(err)
		}
		if got := envelopeFrame(id, tt.d, tt.attempt); string(got) != string(want) {
			t.Errorf("envelopeFrame(%s) =\n%s\nwant\n%s", tt.d.typ, got, want)
		}
	}
}
