package crawl

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/logging"
)

// idleMembers starts n members with empty frontiers (cheap: no crawl).
func idleMembers(t *testing.T, n int) (pki string, all []hostsplit.Member, ms []*Member) {
	root := t.TempDir()
	pki = filepath.Join(root, "pki")
	all, seats, err := LoopbackCluster(pki, n)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
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
	return pki, all, ms
}

// ChangeOptions.Store records the change; a --lost member is fenced and its
// TTL waited before the commit (the order as the driver logs it).
func TestChangeMembershipStoreFencesLost(t *testing.T) {
	pki, all, ms := idleMembers(t, 3)
	// node-2 is declared lost: never contacted (stopping it is h-etcd's fencing)
	v1, v2 := hostsplit.View{Epoch: 1, Members: all}, hostsplit.View{Epoch: 2, Members: all[:2]}
	store := handoff.NewMemStore(v1)
	store.FenceTTL = 1500 * time.Millisecond
	var mu sync.Mutex
	var log []string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := ChangeMembership(ctx, ChangeOptions{TLS: operatorTLS(t, pki), Old: v1, New: v2, Lost: []hostsplit.NodeID{"node-2"},
		Store: store, Logger: logging.Lines(func(l string) {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, l)
		}, slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took < store.FenceTTL {
		t.Errorf("the change took %v, less than the fence TTL %v", took, store.FenceTTL)
	}
	joined := strings.Join(log, "\n")
	if f, c := strings.Index(joined, "leases to expire\" epoch=2 ttl=1.5s"), strings.Index(joined, "COMMIT"); f < 0 || c < 0 || f > c {
		t.Errorf("fence wait not before the commit:\n%s", joined)
	}
	r, ok, _ := store.Current(ctx)
	if !ok || r.Phase != handoff.PhaseDone || !slices.Equal(store.Removed(), []hostsplit.NodeID{"node-2"}) {
		t.Errorf("store after the change: %+v removed %v", r, store.Removed())
	}
	if v, _ := store.View(ctx); v.Epoch != 2 {
		t.Errorf("store view %+v", v)
	}
	for _, m := range ms[:2] {
		if e, p := m.Split.Ownership().Epoch(), m.Phase(); e != 2 || p != PhaseRunning {
			t.Errorf("%s: epoch %d phase %s", m.self, e, p)
		}
		if m.Split.Ownership().Known("node-2") {
			t.Errorf("%s still knows the lost node-2", m.self)
		}
	}
}

// A change the Store refuses (another is open) is reported (ErrBusy) and
// pauses nobody.
func TestChangeMembershipStoreBusy(t *testing.T) {
	pki, all, ms := idleMembers(t, 2)
	v1, v2 := hostsplit.View{Epoch: 1, Members: all}, hostsplit.View{Epoch: 2, Members: all[:1]}
	store := handoff.NewMemStore(v1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := store.Begin(ctx, handoff.Record{ID: "other", Old: v1, New: v2, Deadline: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	_, err := ChangeMembership(ctx, ChangeOptions{TLS: operatorTLS(t, pki), Old: v1, New: v2, Store: store, Logger: logging.Test(t)})
	if !errors.Is(err, handoff.ErrBusy) {
		t.Fatalf("err %v, want ErrBusy", err)
	}
	for _, m := range ms {
		if p := m.Phase(); p != PhaseRunning {
			t.Errorf("%s paused (%s) by a change the store refused", m.self, p)
		}
	}
}

// Closing a member twice (a test's own Close, then its Cleanup; an
// embedder's defer after an explicit Close) returns the first result
// again instead of panicking on a closed channel.
func TestMemberCloseTwice(t *testing.T) {
	_, _, ms := idleMembers(t, 1)
	err := ms[0].Close()
	if err2 := ms[0].Close(); !errors.Is(err2, err) && (err2 != nil || err != nil) {
		t.Errorf("second Close: %v, first: %v", err2, err)
	}
}
