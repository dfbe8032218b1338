package bot

import (
	"fmt"
	"testing"

	"github.com/slackgate/slackgate/blocks"
)

// remembered reports whether the book still holds sessionID's entry and
// how many entries it holds.
func remembered(s *statusBook, sessionID string) (bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.entries[sessionID]
	return ok, s.order.Len()
}

func TestStatusBookForgetsTheLeastRecentlyUsedSessionsBeyondItsBound(t *testing.T) {
	book := &statusBook{max: 3}
	show := func(id string) {
		e := book.lock(id)
		e.shown, e.known = blocks.Status{Phase: blocks.PhaseDone}, true
		book.unlock(e)
	}
	for i := range 10 {
		show(fmt.Sprintf("s%d", i))
	}
	show("s7") // s7 is now the most recently used; s8 the least
	show("s10")
	for id, want := range map[string]bool{"s0": false, "s6": false, "s8": false, "s7": true, "s9": true, "s10": true} {
		if got, n := remembered(book, id); got != want || n != 3 {
			t.Errorf("%s remembered = %v with %d entries, want %v with 3", id, got, n, want)
		}
	}
	e := book.lock("s7")
	defer book.unlock(e)
	if !e.known || e.shown.Phase != blocks.PhaseDone {
		t.Errorf("s7's entry = %+v, want the phase it last showed", e)
	}
}

// An entry in use must survive the bound: forgetting it would let a second
// goroutine create another entry for the same session and post a second
// status message alongside the first.
func TestStatusBookKeepsHeldEntriesOverItsBound(t *testing.T) {
	book := &statusBook{max: 2}
	held := book.lock("held")
	for i := range 5 {
		book.unlock(book.lock(fmt.Sprintf("s%d", i)))
	}
	if ok, n := remembered(book, "held"); !ok || n != 2 {
		t.Fatalf("held remembered = %v with %d entries, want true with 2", ok, n)
	}
	if again := func() *statusEntry { // a second user of the session waits for the same entry
		book.mu.Lock()
		defer book.mu.Unlock()
		return book.entries["held"].Value.(*statusEntry)
	}(); again != held {
		t.Error("a held entry was replaced")
	}
	book.unlock(held)
	for i := range 2 {
		book.unlock(book.lock(fmt.Sprintf("t%d", i)))
	}
	if ok, n := remembered(book, "held"); ok || n != 2 {
		t.Errorf("after release held remembered = %v with %d entries, want false with 2", ok, n)
	}
}
