package bot

import (
	"crypto/sha256"
	"strings"
	"testing"
)

func TestParseAPITokens(t *testing.T) {
	long := strings.Repeat("k", minAPITokenLen)
	toks, err := ParseAPITokens(" laptop:C1:" + long + " ,ci:G2:" + long + "x")
	if err != nil || len(toks) != 2 || toks[0].Name != "laptop" || toks[1].Channel != "G2" {
		t.Fatalf("got %+v, %v", toks, err)
	}
	if toks[1].Hash != sha256.Sum256([]byte(long+"x")) {
		t.Error("the ci token is not kept as its SHA-256")
	}
	if toks, err := ParseAPITokens(""); err != nil || toks != nil {
		t.Errorf("blank = %v, %v; want none", toks, err)
	}
	dm, err := ParseAPITokens("alice:U0ALICE:" + long + ",bob:W0BOB:" + long + "b")
	if err != nil || dm[0].User != "U0ALICE" || dm[0].Channel != "" || dm[1].User != "W0BOB" {
		t.Errorf("user-id entries = %+v, %v; want DMs with U0ALICE and W0BOB", dm, err)
	}
	for _, bad := range []string{"laptop:C1", "lap top:C1:" + long, "a:S0GROUP:" + long, "a:D0DM:" + long, "a:x1:" + long, "a:C1:short", "a:C1:" + long + ",a:C1:" + long + "z"} {
		if _, err := ParseAPITokens(bad); err == nil || strings.Contains(err.Error(), long) {
			t.Errorf("%q: err = %v, want a refusal that does not repeat the token", bad, err)
		}
	}
}
