package relay

import (
	"testing"

	"github.com/rs/zerolog"
)

func TestRoomEvictsOnlyIdleProcessesLongestIdleFirst(t *testing.T) {
	busy := func(id string) *slot { return &slot{id: id, busy: true} }
	idle := func(id string, seq uint64) *slot { return &slot{id: id, idleSeq: seq} }
	evicting := func(s *slot) *slot { s.evicting = true; return s }
	tests := []struct {
		name   string
		max    int
		slots  []*slot
		room   bool
		victim string
	}{
		{"a free place needs no eviction", 2, []*slot{idle("a", 1)}, true, ""},
		{"full of busy processes has no room", 2, []*slot{busy("a"), busy("b")}, false, ""},
		{"the longest-idle process gives way", 3, []*slot{idle("late", 7), busy("b"), idle("early", 3)}, true, "early"},
		{"a process already giving way leaves its place to its successor", 2,
			[]*slot{evicting(idle("a", 1)), busy("new"), idle("c", 2)}, true, "c"},
		{"a process already giving way is not chosen twice", 1,
			[]*slot{evicting(idle("a", 1)), busy("new")}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := NewWorker(Config{ClaudeBin: "unused", WorkerID: "w", MaxSessions: tt.max}, nil, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.slots {
				w.slots[s] = struct{}{}
			}
			room, victim := w.roomLocked()
			got := ""
			if victim != nil {
				got = victim.id
			}
			if room != tt.room || got != tt.victim {
				t.Errorf("room %t, victim %q; want %t, %q", room, got, tt.room, tt.victim)
			}
		})
	}
}

func TestAnEvictedProcessTakesNoMoreMessages(t *testing.T) {
	w, err := NewWorker(Config{ClaudeBin: "unused", WorkerID: "w", MaxSessions: 1}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	old, after := w.admit("old")
	if old == nil || after != nil {
		t.Fatalf("first admit: %v %v", old, after)
	}
	if other, _ := w.admit("busy-full"); other != nil {
		t.Fatal("admitted a session while the only process is busy")
	}
	w.markIdle(old)
	if !w.markBusy(old) {
		t.Fatal("a follow-up for an idle process that nobody evicted was refused")
	}
	w.markIdle(old)
	next, after := w.admit("next")
	if next == nil || after == nil {
		t.Fatalf("admit with an idle process: %v %v", next, after)
	}
	select {
	case <-old.evict:
	default:
		t.Error("the idle process was not told to give way")
	}
	if w.markBusy(old) {
		t.Error("a follow-up was accepted by a process that is giving way")
	}
	select {
	case <-after:
		t.Fatal("the new session may start before the old process is gone")
	default:
	}
	w.dropSlot(old)
	select {
	case <-after:
	default:
		t.Error("the new session was not let start once the old process was gone")
	}
	if third, _ := w.admit("third"); third != nil {
		t.Error("admitted a session beyond MaxSessions")
	}
}
