package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func TestAModeSwitchInputNamesAKnownModeAndIsSigned(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   store.Input
		ok   bool
	}{
		{"KnownMode", store.Input{SessionID: "s", Control: store.ControlSetMode, Mode: "acceptEdits"}, true},
		{"UnknownMode", store.Input{SessionID: "s", Control: store.ControlSetMode, Mode: "yolo"}, false},
		{"NoMode", store.Input{SessionID: "s", Control: store.ControlSetMode}, false},
		{"ModeOnAMessage", store.Input{SessionID: "s", Text: "hi", Mode: "plan"}, false},
		{"ModeOnAnInterrupt", store.Input{SessionID: "s", Control: store.ControlInterrupt, Mode: "plan"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.in.Validate(); (err == nil) != tc.ok || err != nil && !errors.Is(err, store.ErrInvalid) {
				t.Errorf("Validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
	pub, priv := testKey(1)
	in := store.Input{ID: "in-1", SessionID: "s", Control: store.ControlSetMode, Mode: "plan", User: "U1", At: time.Unix(1, 0)}
	if err := store.SignInput(priv, &in); err != nil {
		t.Fatal(err)
	}
	in.Mode = "bypassPermissions"
	if err := store.VerifyInput(pub, in); !errors.Is(err, store.ErrBadSignature) {
		t.Errorf("an input whose mode was changed after signing: VerifyInput = %v, want ErrBadSignature", err)
	}
}
