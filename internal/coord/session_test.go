package coord

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/netcut"
)

const testTTL = 2 * time.Second

// testElection is the embedded members' election timeout (ElectionMs):
// TTL 2 s needs one of at most 0.55 s (Options.validateSession).
const testElection = 500 * time.Millisecond

func (p *pki) session(id string, endpoints ...string) *Session {
	p.t.Helper()
	s, err := NewSession(Options{Endpoints: endpoints, TLS: p.client(id), TTL: testTTL, RequestTimeout: 500 * time.Millisecond,
		DialTimeout: 500 * time.Millisecond, ElectionTimeout: testElection}, hostsplit.NodeID(id))
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { s.Close() })
	return s
}

// waitHeld waits until s.Held() is want and returns how long that took.
func waitHeld(t *testing.T, s *Session, want bool, within time.Duration) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	for {
		held, why := s.Held()
		if held == want {
			return time.Since(start), why
		}
		if time.Since(start) > within {
			t.Fatalf("Held stayed %v for %v: %s", !want, within, why)
		}
		select {
		case <-s.Changed():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func proxy(t *testing.T, target string) *netcut.Proxy {
	t.Helper()
	p, err := netcut.New(strings.TrimPrefix(target, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestFenceCutAndHeal: a node cut off from etcd loses Held within its TTL
// (before etcd could expire its lease), and gets it back when healed; a
// view it has not adopted also stops it.
func TestFenceCutAndHeal(t *testing.T) {
	p := newPKI(t)
	e := p.embedded("etcd-0")
	op := p.store("operator", e.ClientURL)
	ctx := context.Background()
	v1 := view(1, "n0", "n1")
	if _, err := op.Init(ctx, v1); err != nil {
		t.Fatal(err)
	}
	px := proxy(t, e.ClientURL)
	s := p.session("n0", "https://"+px.Addr())
	if held, why := s.Held(); held {
		t.Fatal("held before adopting a view")
	} else {
		t.Logf("before Adopt: %s", why)
	}
	s.Adopt(1)
	waitHeld(t, s, true, 5*time.Second)

	px.SetCut(true)
	cut := time.Now()
	d, why := waitHeld(t, s, false, testTTL)
	t.Logf("cut -> fenced in %v (TTL %v): %s", d, testTTL, why)
	if since := time.Since(cut); since >= testTTL {
		t.Fatalf("fenced %v after the cut, TTL %v", since, testTTL)
	}
	px.SetCut(false)
	d, _ = waitHeld(t, s, true, 10*time.Second)
	t.Logf("heal -> held in %v", d)

	// A newer view in etcd the node has not adopted fences it.
	r, err := op.Begin(ctx, handoff.Record{ID: "c", Old: v1, New: view(2, "n0", "n1", "n2")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Commit(ctx, r); err != nil {
		t.Fatal(err)
	}
	_, why = waitHeld(t, s, false, 5*time.Second)
	if !strings.Contains(why, "epoch 2") {
		t.Fatalf("fenced for %q, want the newer epoch", why)
	}
	s.Adopt(2)
	waitHeld(t, s, true, 5*time.Second)
}

// TestFenceRemovedWhileCut is defect 1 on the control plane: n1 is cut
// off, removed as lost (its lease revoked), and healed: it must not be
// Held after Fence's wait, and must learn it was removed.
func TestFenceRemovedWhileCut(t *testing.T) {
	p := newPKI(t)
	e := p.embedded("etcd-0")
	op := p.store("operator", e.ClientURL)
	ctx := context.Background()
	v1 := view(1, "n0", "n1")
	if _, err := op.Init(ctx, v1); err != nil {
		t.Fatal(err)
	}
	px := proxy(t, e.ClientURL)
	s := p.session("n1", "https://"+px.Addr())
	s.Adopt(1)
	waitHeld(t, s, true, 5*time.Second)
	px.SetCut(true)
	r, err := op.Begin(ctx, handoff.Record{ID: "lost", Old: v1, New: view(2, "n0"), Lost: []hostsplit.NodeID{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = op.Advance(ctx, r, handoff.PhaseFencing); err != nil {
		t.Fatal(err)
	}
	wait, err := op.Fence(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	fenced := time.Now()
	time.Sleep(wait)
	if held, _ := s.Held(); held {
		t.Fatalf("n1 still held %v after Fence", time.Since(fenced))
	}
	if _, err := op.Commit(ctx, r); err != nil {
		t.Fatal(err)
	}
	px.SetCut(false)
	deadline := time.Now().Add(10 * time.Second)
	for !s.Removed() {
		if time.Now().After(deadline) {
			_, why := s.Held()
			t.Fatalf("n1 never learned it was removed: %s", why)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v, _ := s.View(); v.Epoch != 2 {
		t.Fatalf("n1 sees view epoch %d after the heal, want 2", v.Epoch)
	}
	if held, why := s.Held(); held || !strings.Contains(why, "removed") {
		t.Fatalf("after the heal: held=%v %q", held, why)
	}
}

// TestAuthNodeCannotWriteView: with RBAC on, a node identity reads the
// view and keeps its lease but may not change membership.
func TestAuthNodeCannotWriteView(t *testing.T) {
	p := newPKI(t)
	e := p.embedded("etcd-0")
	boot := p.store("root", e.ClientURL) // before auth is enabled anyone may set it up
	ctx := context.Background()
	v1 := view(1, "n0", "n1")
	if _, err := boot.Init(ctx, v1); err != nil {
		t.Fatal(err)
	}
	if err := SetupAuth(ctx, boot.Client(), Options{}, []string{"n0", "n1"}, []string{"alice"}); err != nil {
		t.Fatal(err)
	}
	node := p.store("n0", e.ClientURL)
	if got, err := node.View(ctx); err != nil || got.Epoch != 1 {
		t.Fatalf("node reads the view: %v %v", got, err)
	}
	r := handoff.Record{ID: "evil", Old: v1, New: view(2, "n0")}
	if _, err := node.Begin(ctx, r); !errors.Is(err, handoff.ErrDenied) {
		t.Fatalf("node Begin: %v, want ErrDenied", err)
	}
	if _, err := node.Init(ctx, view(5, "n0")); !errors.Is(err, handoff.ErrDenied) {
		t.Fatalf("node writes the view: %v, want ErrDenied", err)
	}
	s := p.session("n1", e.ClientURL)
	s.Adopt(1)
	waitHeld(t, s, true, 5*time.Second)
	alice := p.store("alice", e.ClientURL)
	r, err := alice.Begin(ctx, handoff.Record{ID: "ok", Old: v1, New: view(2, "n0"), Operator: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Fence(ctx, r); err != nil {
		t.Fatalf("operator fences n1: %v", err)
	}
	waitHeld(t, s, false, 2*time.Second)
	if !s.Removed() {
		t.Fatal("n1's lease revoked but it does not know it was removed")
	}
}

// TestSessionInitView: a session given InitView stores it while etcd has
// no view (nodes started before anyone stored one) and is then Held; a
// later session's InitView does not replace the stored view.
func TestSessionInitView(t *testing.T) {
	p := newPKI(t)
	e := p.embedded("etcd-0")
	o := func(id string, v hostsplit.View) Options {
		return Options{Endpoints: []string{e.ClientURL}, TLS: p.client(id), TTL: testTTL, ElectionTimeout: testElection, InitView: &v}
	}
	s0, err := NewSession(o("n0", view(1, "n0", "n1")), "n0")
	if err != nil {
		t.Fatal(err)
	}
	defer s0.Close()
	s0.Adopt(1)
	waitHeld(t, s0, true, 5*time.Second)
	s1, err := NewSession(o("n1", view(7, "n1")), "n1")
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s1.Adopt(1)
	waitHeld(t, s1, true, 5*time.Second)
	if v, _ := s1.View(); v.Epoch != 1 {
		t.Fatalf("n1 sees epoch %d, want the first stored view's 1", v.Epoch)
	}
}
