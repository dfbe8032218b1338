package store_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// TestAuditCanonicalIsWhatThePackageDocSays: the bytes an auditor
// reimplements from the doc, field by field.
func TestAuditCanonicalIsWhatThePackageDocSays(t *testing.T) {
	e := store.AuditEntry{
		ID: "1700000000000-0", Seq: 7, Prev: strings.Repeat("ab", 32), Hash: strings.Repeat("cd", 32),
		At:     time.Date(2026, 11, 23, 11, 31, 2, 500_000_000, time.FixedZone("CET", 3600)),
		Action: store.AuditSettled, RequestID: "req-1", SessionID: "sess-1", Kind: store.KindTool, Tool: "Bash",
		Outcome: store.OutcomeDeny, By: "U1", ByName: "Zoë", Message: "no\nway", Channel: "C1",
	}
	got, err := store.AuditCanonical(e)
	if err != nil {
		t.Fatal(err)
	}
	want := "slackgate audit entry v1\n" +
		"action=7:settled\n" +
		"at=22:2026-11-23T10:31:02.5Z\n" +
		"by=2:U1\n" +
		"by_name=4:Zoë\n" +
		"channel=2:C1\n" +
		"kind=4:tool\n" +
		"message=6:no\nway\n" +
		"outcome=4:deny\n" +
		"request_id=5:req-1\n" +
		"session_id=6:sess-1\n" +
		"tool=4:Bash\n"
	if string(got) != want {
		t.Fatalf("canonical encoding:\n%q\nwant\n%q", got, want)
	}
	d, err := store.AuditDigest(e)
	if err != nil || d != sha256.Sum256([]byte(want)) {
		t.Fatalf("digest = %x, %v; want SHA-256 of the encoding", d, err)
	}
}

// TestEveryAuditFieldIsCovered: a field added to AuditEntry is hashed
// unless it is one of the four the doc leaves out, so nobody adds one the
// chain silently ignores.
func TestEveryAuditFieldIsCovered(t *testing.T) {
	base := store.AuditEntry{At: time.Unix(1, 0), Action: store.AuditCreated}
	d0, err := store.AuditDigest(base)
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeFor[store.AuditEntry]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		e := base
		v := reflect.ValueOf(&e).Elem().Field(i)
		switch {
		case f.Type == reflect.TypeFor[time.Time]():
			v.Set(reflect.ValueOf(time.Unix(2, 0)))
		case v.Kind() == reflect.String:
			v.SetString("x")
		case v.Kind() == reflect.Bool:
			v.SetBool(true)
		case v.CanUint():
			v.SetUint(9)
		case v.CanInt():
			v.SetInt(9)
		default:
			t.Fatalf("AuditEntry.%s is a %s: give it a canonical form (store.AuditCanonical) or make it a string", f.Name, v.Kind())
		}
		d, err := store.AuditDigest(e)
		if err != nil {
			t.Fatalf("AuditEntry.%s: %v", f.Name, err)
		}
		unhashed := name == "id" || name == "seq" || name == "prev" || name == "hash"
		if (d == d0) != unhashed {
			t.Errorf("AuditEntry.%s (%s): digest changed = %v; only id, seq, prev and hash are left out of the chain", f.Name, name, d != d0)
		}
	}
}

func TestAuditLinkHashIsSHA256OfTheDocumentedBytes(t *testing.T) {
	digest := sha256.Sum256([]byte("an entry"))
	prev := strings.Repeat("0f", 32)
	got, err := store.AuditLinkHash(1<<40+3, prev, digest)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("slackgate audit chain link v1.0\n")
	if len(msg) != 32 {
		t.Fatalf("the link domain is %d bytes; the doc (and the Redis script's one compression) need 32", len(msg))
	}
	msg = append(msg, digest[:]...)
	msg = binary.BigEndian.AppendUint64(msg, 1<<40+3)
	p, _ := hex.DecodeString(prev)
	sum := sha256.Sum256(append(msg, p...))
	if got != hex.EncodeToString(sum[:]) {
		t.Fatalf("AuditLinkHash = %s, want %x", got, sum)
	}
	for _, bad := range []string{"", "00", strings.Repeat("0F", 32), strings.Repeat("g", 64)} {
		if _, err := store.AuditLinkHash(1, bad, digest); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("AuditLinkHash with prev %q: %v, want ErrInvalid", bad, err)
		}
	}
}

// TestAuditBodyDigestsWhatAReaderDecodes: what the encoding changes
// (invalid UTF-8, a zone) is what the digest covers, so the entry read
// back verifies.
func TestAuditBodyDigestsWhatAReaderDecodes(t *testing.T) {
	e := store.AuditEntry{At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("X", -7200)), Action: store.AuditToolRan,
		SessionID: "s", Tool: "Bash", Result: store.ToolSucceeded, Message: "bad \xff utf-8 <&>", Seq: 4, Hash: "ignored"}
	body, digest, err := store.AuditBody(e)
	if err != nil {
		t.Fatal(err)
	}
	var back store.AuditEntry
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	if back.Seq != 0 || back.Hash != "" {
		t.Errorf("the body keeps chain fields: %s", body)
	}
	if d, _ := store.AuditDigest(back); d != digest {
		t.Errorf("digest of the entry read back differs from AuditBody's")
	}
}

func TestAuditCheckpointSignatures(t *testing.T) {
	pub, priv := testKey(1)
	other, _ := testKey(2)
	cp := store.AuditCheckpoint{Seq: 100, Hash: strings.Repeat("a", 64), At: at, Entry: "e100"}
	if err := store.SignAuditCheckpoint(priv, &cp); err != nil {
		t.Fatal(err)
	}
	if err := cp.Validate(); err != nil {
		t.Fatalf("a signed checkpoint fails Validate: %v", err)
	}
	if err := store.VerifyAuditCheckpoint(pub, cp); err != nil {
		t.Fatalf("fresh signature: %v", err)
	}
	moved := cp
	moved.Entry = "elsewhere" // where it is kept is not signed
	if err := store.VerifyAuditCheckpoint(pub, moved); err != nil {
		t.Errorf("the entry's id is a locator, not signed: %v", err)
	}
	for name, f := range map[string]func(*store.AuditCheckpoint){
		"seq":  func(c *store.AuditCheckpoint) { c.Seq++ },
		"hash": func(c *store.AuditCheckpoint) { c.Hash = strings.Repeat("b", 64) },
		"time": func(c *store.AuditCheckpoint) { c.At = c.At.Add(time.Nanosecond) },
	} {
		c := cp
		f(&c)
		if err := store.VerifyAuditCheckpoint(pub, c); !errors.Is(err, store.ErrAuditCheckpoint) {
			t.Errorf("checkpoint with its %s changed verifies: %v", name, err)
		}
	}
	if err := store.VerifyAuditCheckpoint(other, cp); !errors.Is(err, store.ErrAuditCheckpoint) {
		t.Errorf("checkpoint verifies under another key: %v", err)
	}
	// A decision's signature, made by the same key, is no checkpoint's.
	_, d := signedFixture(t, priv)
	forged := cp
	forged.Signature = d.Signature
	if err := store.VerifyAuditCheckpoint(pub, forged); !errors.Is(err, store.ErrAuditCheckpoint) {
		t.Errorf("a decision signature passes as a checkpoint's: %v", err)
	}
	r, dd := signedFixture(t, priv)
	payload, _ := store.DecisionPayload(r, dd)
	if strings.HasPrefix(string(payload), "slackgate audit") || strings.HasPrefix(string(store.AuditCheckpointPayload(cp)), "slackgate decision") {
		t.Error("decision and checkpoint payloads share a domain")
	}
}
