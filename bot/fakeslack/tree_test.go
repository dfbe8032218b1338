package fakeslack

import (
	"encoding/json"
	"slices"
	"testing"
)

// A copy of a message shares its decoded blocks, unless the copy's
// RawBlocks were replaced: then it reads its own.
func TestDecodedBlocksFollowRawBlocks(t *testing.T) {
	button := func(label string) json.RawMessage {
		return json.RawMessage(`[{"type":"actions","elements":[{"type":"button","action_id":"a","text":{"type":"plain_text","text":"` + label + `"}}]}]`)
	}
	m := Message{Text: "t", RawBlocks: button("Approve")}
	m.tree = newBlockTree(m.RawBlocks)
	c := m
	if got := c.Buttons(); !slices.Equal(got, []string{"Approve"}) || c.decoded() != m.tree {
		t.Fatalf("copy: buttons %q, shares the tree: %v", got, c.decoded() == m.tree)
	}
	c.RawBlocks = button("Deny")
	if got := c.Buttons(); !slices.Equal(got, []string{"Deny"}) || !c.HasText("Deny") || c.HasText("Approve") {
		t.Errorf("copy with new blocks: buttons %q, all text %q", got, c.AllText())
	}
	if got := m.Buttons(); !slices.Equal(got, []string{"Approve"}) {
		t.Errorf("original after the copy changed: buttons %q", got)
	}
	if got := (Message{Text: "only text"}).AllText(); got != "only text" {
		t.Errorf("no blocks: AllText %q", got)
	}
}
