package crawl

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/logging"
)

// A coordinator that stopped after the commit leaves the Store's record
// open (committing); the re-run finds every member committed, sends RESUME
// and must end the record too, or every later change is refused
// (ErrBusy). Failed before: the record stayed "committing".
func TestChangeMembershipRerunEndsRecord(t *testing.T) {
	root := t.TempDir()
	pki := filepath.Join(root, "pki")
	all, seats, err := LoopbackCluster(pki, 2)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := hostsplit.View{Epoch: 1, Members: all[:1]}, hostsplit.View{Epoch: 2, Members: all}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The members are on epoch 2 already (they committed).
	for _, s := range seats {
		m, err := StartMember(MemberOptions{Node: Options{DataDir: filepath.Join(root, s.ID), Workers: 1},
			Self: s.ID, Members: all, TLS: s.TLS, Listener: s.Listener, Epoch: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		go m.Run(ctx)
	}
	store := handoff.NewMemStore(v1)
	r, err := store.Begin(ctx, handoff.Record{ID: "c1", Old: v1, New: v2, Deadline: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Commit(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := ChangeMembership(ctx, ChangeOptions{TLS: operatorTLS(t, pki), Old: v1, New: v2, Store: store, Logger: logging.Test(t)}); err != nil {
		t.Fatal(err)
	}
	if r, ok, _ := store.Current(ctx); !ok || r.Phase != handoff.PhaseDone {
		t.Errorf("record after the re-run: %s %s, want done", r.ID, r.Phase)
	}
}

// A coordinator that stopped right after the Store's commit, before any
// COMMIT reached a member: the re-run (same views) cannot Begin (the
// record is open: ErrBusy) and must go forward from the record: COMMIT,
// hand-offs applied, RESUME, record done. Failed before (ErrBusy).
func TestChangeMembershipRerunAfterStoreCommit(t *testing.T) {
	root := t.TempDir()
	pki := filepath.Join(root, "pki")
	all, seats, err := LoopbackCluster(pki, 2)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := hostsplit.View{Epoch: 1, Members: all}, hostsplit.View{Epoch: 2, Members: all[:1]}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ms []*Member
	for _, s := range seats {
		m, err := StartMember(MemberOptions{Node: Options{DataDir: filepath.Join(root, s.ID), Workers: 1},
			Self: s.ID, Members: all, TLS: s.TLS, Listener: s.Listener})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		go m.Run(ctx)
		ms = append(ms, m)
	}
	deadline := time.Now().Add(time.Minute)
	for _, m := range ms {
		if err := m.prepare(ctx, v2, deadline); err != nil {
			t.Fatal(err)
		}
	}
	store := handoff.NewMemStore(v1)
	r, err := store.Begin(ctx, handoff.Record{ID: "c1", Old: v1, New: v2, Deadline: deadline})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = store.Advance(ctx, r, handoff.PhaseFencing); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Fence(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Commit(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := ChangeMembership(ctx, ChangeOptions{TLS: operatorTLS(t, pki), Old: v1, New: v2, Store: store, Logger: logging.Test(t)}); err != nil {
		t.Fatal(err)
	}
	if r, ok, _ := store.Current(ctx); !ok || r.Phase != handoff.PhaseDone {
		t.Errorf("record after the re-run: %s %s, want done", r.ID, r.Phase)
	}
	if e, p := ms[0].Split.Ownership().Epoch(), ms[0].Phase(); e != 2 || p != PhaseRunning {
		t.Errorf("node-0: epoch %d phase %s, want 2 running", e, p)
	}
	if e, p := ms[1].Split.Ownership().Epoch(), ms[1].Phase(); e != 2 || p != PhaseRemoved {
		t.Errorf("node-1: epoch %d phase %s, want 2 removed", e, p)
	}
}
