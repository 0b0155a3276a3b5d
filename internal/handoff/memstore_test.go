package handoff

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

func TestMemStore(t *testing.T) {
	ctx := context.Background()
	v1 := hostsplit.View{Epoch: 1, Members: members("node-0,node-1,node-2")}
	v2 := hostsplit.View{Epoch: 2, Members: members("node-0,node-2")}
	now := t0
	s := NewMemStore(v1)
	s.FenceTTL = 3 * time.Second
	s.Now = func() time.Time { return now }
	if _, ok, _ := s.Current(ctx); ok {
		t.Fatal("a new store has a change")
	}
	r, err := s.Begin(ctx, Record{ID: "c1", Old: v1, New: v2, Deadline: t0.Add(time.Minute)})
	if err != nil || r.Phase != PhasePreparing || r.Rev == 0 {
		t.Fatalf("Begin = %+v, %v", r, err)
	}
	if _, err := s.Begin(ctx, Record{ID: "c2", Old: v1, New: v2, Deadline: t0.Add(time.Minute)}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Begin: %v, want ErrBusy", err)
	}
	if _, err := s.Commit(ctx, Record{ID: "c1", Rev: r.Rev - 1}); !errors.Is(err, ErrStale) {
		t.Fatalf("Commit at an old revision: %v, want ErrStale", err)
	}
	if _, err := s.Advance(ctx, r, PhaseCommitting); !errors.Is(err, ErrStale) {
		t.Fatalf("Advance to committing: %v, want ErrStale (Commit does that)", err)
	}
	if r, err = s.Advance(ctx, r, PhaseFencing); err != nil {
		t.Fatal(err)
	}
	ttl, err := s.Fence(ctx, r)
	if err != nil || ttl != 3*time.Second {
		t.Fatalf("Fence = %v, %v", ttl, err)
	}
	if rm := s.Removed(); len(rm) != 1 || rm[0] != "node-1" {
		t.Fatalf("Removed = %v, want [node-1]", rm)
	}
	if r, err = s.Commit(ctx, r); err != nil || r.Phase != PhaseCommitting {
		t.Fatalf("Commit = %+v, %v", r, err)
	}
	if v, _ := s.View(ctx); v.Epoch != 2 {
		t.Fatalf("view after commit: %+v", v)
	}
	if _, err := s.Advance(ctx, r, PhaseAborted); !errors.Is(err, ErrStale) {
		t.Fatalf("abort after commit: %v, want ErrStale", err)
	}
	if r, err = s.Advance(ctx, r, PhaseResuming); err != nil {
		t.Fatal(err)
	}
	if r, err = s.Advance(ctx, r, PhaseDone); err != nil {
		t.Fatal(err)
	}
	v3 := hostsplit.View{Epoch: 3, Members: members("node-0,node-2,node-1")}
	if _, err := s.Begin(ctx, Record{ID: "c3", Old: v2, New: v3, Deadline: t0.Add(time.Minute)}); !errors.Is(err, ErrRemoved) {
		t.Fatalf("re-adding a removed id: %v, want ErrRemoved", err)
	}
	if _, err := s.Begin(ctx, Record{ID: "c3", Old: v1, New: v3, Deadline: t0.Add(time.Minute)}); !errors.Is(err, ErrStale) {
		t.Fatalf("Begin from an old view: %v, want ErrStale", err)
	}
}

// A change past its deadline cannot commit, and an aborted change's fenced
// ids are members again (no leases in memory).
func TestMemStoreDeadlineAndAbort(t *testing.T) {
	ctx := context.Background()
	v1 := hostsplit.View{Epoch: 1, Members: members("node-0,node-1")}
	v2 := hostsplit.View{Epoch: 2, Members: members("node-0")}
	now := t0
	s := NewMemStore(v1)
	s.Now = func() time.Time { return now }
	r, err := s.Begin(ctx, Record{ID: "c1", Old: v1, New: v2, Lost: []hostsplit.NodeID{"node-1"}, Deadline: t0.Add(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = s.Advance(ctx, r, PhaseFencing); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fence(ctx, r); err != nil {
		t.Fatal(err)
	}
	now = t0.Add(10 * time.Second)
	if _, err := s.Commit(ctx, r); !errors.Is(err, ErrStale) {
		t.Fatalf("Commit at the deadline: %v, want ErrStale", err)
	}
	r.Reason = "timeout"
	if r, err = s.Advance(ctx, r, PhaseAborted); err != nil || r.Reason != "timeout" {
		t.Fatalf("abort: %+v, %v", r, err)
	}
	if rm := s.Removed(); len(rm) != 0 {
		t.Fatalf("Removed after abort = %v, want none", rm)
	}
	if v, _ := s.View(ctx); v.Epoch != 1 {
		t.Fatalf("view after abort: %+v", v)
	}
	if _, err := s.Begin(ctx, Record{ID: "c2", Old: v1, New: v2, Deadline: t0.Add(time.Minute)}); err != nil {
		t.Fatalf("Begin after an abort: %v", err)
	}
}
