package relay

import (
	"context"
	"errors"
	"testing"
)

func TestRoomEvictsOnlyIdleProcessesLongestIdleFirst(t *testing.T) {
	busy := func(id string) *slot { return &slot{id: id} }
	idle := func(id string, seq uint64) *slot { return &slot{id: id, idle: true, idleSeq: seq} }
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
			c := newCapacity(tt.max)
			for _, s := range tt.slots {
				c.slots[s] = struct{}{}
			}
			room, victim := c.roomLocked()
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

func TestCapacityAdmitsUpToMaxWithoutEvicting(t *testing.T) {
	c := newCapacity(3)
	for _, id := range []string{"a", "b", "c"} {
		sl, victim := c.admit(id)
		if sl == nil || victim != nil {
			t.Fatalf("admit %s: slot %v, victim %v; want a slot and no victim", id, sl, victim)
		}
		if sl.id != id || sl.idle {
			t.Errorf("admitted slot %+v: want id %s, not idle (its process is starting)", sl, id)
		}
	}
	if sl, _ := c.admit("d"); sl != nil {
		t.Error("admitted a fourth session while three busy processes hold every place")
	}
}

func TestCapacityEvictsTheLongestIdleAndNeverABusyOne(t *testing.T) {
	c := newCapacity(3)
	a, _ := c.admit("a")
	b, _ := c.admit("b")
	d, _ := c.admit("d")
	c.markIdle(b) // b went idle first,
	c.markIdle(a) // then a,
	c.markIdle(d)
	if !c.markBusy(b) { // but b took a new message: busy again
		t.Fatal("a follow-up for an idle process that nobody evicted was refused")
	}
	sl, victim := c.admit("e")
	if sl == nil || victim != a {
		t.Fatalf("admit e: victim %v, want a (the longest-idle; b is busy)", victim)
	}
	sl, victim = c.admit("f")
	if sl == nil || victim != d {
		t.Fatalf("admit f: victim %v, want d", victim)
	}
	if sl, victim := c.admit("g"); sl != nil || victim != nil {
		t.Errorf("admit g: slot %v, victim %v; want no room (b is busy, a and d already give way)", sl, victim)
	}
}

func TestAnEvictedProcessTakesNoMoreMessages(t *testing.T) {
	c := newCapacity(1)
	old, victim := c.admit("old")
	if old == nil || victim != nil {
		t.Fatalf("first admit: %v %v", old, victim)
	}
	if other, _ := c.admit("busy-full"); other != nil {
		t.Fatal("admitted a session while the only process is busy")
	}
	c.markIdle(old)
	if !c.markBusy(old) {
		t.Fatal("a follow-up for an idle process that nobody evicted was refused")
	}
	c.markIdle(old)
	next, victim := c.admit("next")
	if next == nil || victim != old {
		t.Fatalf("admit with an idle process: %v %v", next, victim)
	}
	select {
	case <-old.evict:
	default:
		t.Error("the idle process was not told to give way")
	}
	if c.markBusy(old) {
		t.Error("a follow-up was accepted by a process that is giving way")
	}
	select {
	case <-victim.exited:
		t.Fatal("the new session may start before the old process is gone")
	default:
	}
	c.drop(old)
	select {
	case <-victim.exited:
	default:
		t.Error("the new session was not let start once the old process was gone")
	}
	if third, _ := c.admit("third"); third != nil {
		t.Error("admitted a session beyond MaxSessions")
	}
}

func TestCapacityWaitRoomWakesWhenTheRoomChanges(t *testing.T) {
	c := newCapacity(1)
	sl, _ := c.admit("a")

	// Full of a busy process: no room, so waiting for it needs ctx to end.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.waitRoom(ended, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("waitRoom(room) on a full capacity = %v, want it to wait until ctx ends", err)
	}
	if err := c.waitRoom(ended, false); err != nil {
		t.Fatalf("waitRoom(no room) on a full capacity = %v, want nil at once", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	room := make(chan error, 1)
	go func() { room <- c.waitRoom(ctx, true) }()
	c.markIdle(sl) // an idle process gives way: there is room
	if err := <-room; err != nil {
		t.Fatalf("waitRoom(room) after the process went idle: %v", err)
	}

	noRoom := make(chan error, 1)
	go func() { noRoom <- c.waitRoom(ctx, false) }()
	c.markBusy(sl) // busy again: the room is gone
	if err := <-noRoom; err != nil {
		t.Fatalf("waitRoom(no room) after the process turned busy: %v", err)
	}

	go func() { room <- c.waitRoom(ctx, true) }()
	c.drop(sl)
	if err := <-room; err != nil {
		t.Fatalf("waitRoom(room) after the slot was dropped: %v", err)
	}
}

func TestCapacityDropIsIdempotentAndADroppedSlotStaysGone(t *testing.T) {
	c := newCapacity(1)
	sl, _ := c.admit("a")
	c.drop(sl)
	c.drop(sl) // a second drop must neither panic on the closed channel nor free another place
	c.markIdle(sl)
	if sl.idle {
		t.Error("a dropped slot became idle again")
	}
	b, _ := c.admit("b")
	if b == nil {
		t.Fatal("the dropped slot's place was not freed")
	}
	if other, victim := c.admit("c"); other != nil || victim != nil {
		t.Errorf("admit c: %v %v; the second drop freed a place it did not hold", other, victim)
	}
}
