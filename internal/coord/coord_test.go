package coord

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// pki is a test CA issuing etcd member, node and operator certificates.
type pki struct {
	t  *testing.T
	ca *tlsutil.CA
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	ca, err := tlsutil.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{t: t, ca: ca}
}

func (p *pki) issue(cn string) [2][]byte {
	p.t.Helper()
	c, k, err := p.ca.Issue(cn, []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		p.t.Fatal(err)
	}
	return [2][]byte{c, k}
}

// client is the TLS config of a client with CN cn.
func (p *pki) client(cn string) *tls.Config {
	p.t.Helper()
	ck := p.issue(cn)
	pair, err := tls.X509KeyPair(ck[0], ck[1])
	if err != nil {
		p.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.ca.CertPEM)
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}
}

func (p *pki) embedded(name string) *Embedded {
	p.t.Helper()
	ck := p.issue(name)
	e, err := StartEmbedded(EmbedOptions{Name: name, Dir: p.t.TempDir(), CAPEM: p.ca.CertPEM, CertPEM: ck[0], KeyPEM: ck[1],
		TickMs: 50, ElectionMs: 500})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(e.Close)
	return e
}

func (p *pki) store(cn string, endpoints ...string) *Store {
	p.t.Helper()
	s, err := Open(Options{Endpoints: endpoints, TLS: p.client(cn), TTL: 2 * time.Second})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { s.Close() })
	return s
}

func view(epoch uint64, ids ...string) hostsplit.View {
	v := hostsplit.View{Epoch: epoch}
	for _, id := range ids {
		v.Members = append(v.Members, hostsplit.Member{ID: hostsplit.NodeID(id), Addr: "127.0.0.1:1"})
	}
	return v
}

// TestStoreChange walks a change through the store and checks each
// refusal: busy, stale, removed.
func TestStoreChange(t *testing.T) {
	p := newPKI(t)
	e := p.embedded("etcd-0")
	s := p.store("operator", e.ClientURL)
	ctx := context.Background()
	if _, err := s.View(ctx); !errors.Is(err, ErrNoView) {
		t.Fatalf("View before Init: %v, want ErrNoView", err)
	}
	v1 := view(1, "n0", "n1", "n2")
	if _, err := s.Init(ctx, v1); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Init(ctx, view(7, "x")); err != nil || got.Epoch != 1 {
		t.Fatalf("second Init: %v %v, want the stored epoch 1", got, err)
	}
	v2 := view(2, "n0", "n1")
	r, err := s.Begin(ctx, handoff.Record{ID: "c1", Old: v1, New: v2, Lost: []hostsplit.NodeID{"n2"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != handoff.PhasePreparing || r.Rev == 0 {
		t.Fatalf("Begin: %+v", r)
	}
	if _, err := s.Begin(ctx, handoff.Record{ID: "c2", Old: v1, New: view(2, "n0")}); !errors.Is(err, handoff.ErrBusy) {
		t.Fatalf("second Begin: %v, want ErrBusy", err)
	}
	stale := r
	r, err = s.Advance(ctx, r, handoff.PhaseFencing)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Advance(ctx, stale, handoff.PhaseAborted); !errors.Is(err, handoff.ErrStale) {
		t.Fatalf("Advance at an old revision: %v, want ErrStale", err)
	}
	wait, err := s.Fence(ctx, r)
	if err != nil || wait != 0 {
		t.Fatalf("Fence: %v %v, want 0 (n2 never held a lease)", wait, err)
	}
	if gone, _ := s.Removed(ctx, "n2"); !gone {
		t.Fatal("n2 not recorded as removed")
	}
	if r, err = s.Commit(ctx, r); err != nil || r.Phase != handoff.PhaseCommitting {
		t.Fatalf("Commit: %+v %v", r, err)
	}
	if got, _ := s.View(ctx); got.Epoch != 2 || got.Has("n2") {
		t.Fatalf("view after commit: %+v", got)
	}
	if _, err := s.Advance(ctx, r, handoff.PhaseAborted); !errors.Is(err, handoff.ErrStale) {
		t.Fatalf("abort after commit: %v, want ErrStale", err)
	}
	if r, err = s.Advance(ctx, r, handoff.PhaseDone); err != nil {
		t.Fatal(err)
	}
	if cur, ok, err := s.Current(ctx); err != nil || !ok || cur.ID != "c1" || cur.Phase != handoff.PhaseDone || cur.Rev != r.Rev {
		t.Fatalf("Current: %+v %v %v", cur, ok, err)
	}
	// The removed id never comes back; a change from an old view is stale.
	if _, err := s.Begin(ctx, handoff.Record{ID: "c3", Old: v2, New: view(3, "n0", "n1", "n2")}); !errors.Is(err, handoff.ErrRemoved) {
		t.Fatalf("re-adding n2: %v, want ErrRemoved", err)
	}
	if _, err := s.Begin(ctx, handoff.Record{ID: "c4", Old: v1, New: view(3, "n0", "n1", "n3")}); !errors.Is(err, handoff.ErrStale) {
		t.Fatalf("change from epoch 1: %v, want ErrStale", err)
	}
	r, err = s.Begin(ctx, handoff.Record{ID: "c5", Old: v2, New: view(3, "n0", "n1", "n3")})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = s.Advance(ctx, r, handoff.PhaseAborted); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.View(ctx); got.Epoch != 2 {
		t.Fatalf("view after abort: epoch %d", got.Epoch)
	}
}

// An abort after the fence un-removes the members the change fenced (they
// are members of the view that stays), as handoff.MemStore does; marks of
// an earlier change stay. Failed before: the graceful leaver stayed
// removed in etcd, so its Session stopped it for good after the rollback.
func TestStoreAbortAfterFenceUnremoves(t *testing.T) {
	p := newPKI(t)
	e := p.embedded("etcd-0")
	s := p.store("operator", e.ClientURL)
	ctx := context.Background()
	v1 := view(1, "n0", "n1", "n2")
	if _, err := s.Init(ctx, v1); err != nil {
		t.Fatal(err)
	}
	n2 := p.session("n2", e.ClientURL)
	n2.Adopt(1)
	waitHeld(t, n2, true, 5*time.Second)
	r, err := s.Begin(ctx, handoff.Record{ID: "leave-n2", Old: v1, New: view(2, "n0", "n1")})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = s.Advance(ctx, r, handoff.PhaseFencing); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fence(ctx, r); err != nil {
		t.Fatal(err)
	}
	if gone, _ := s.Removed(ctx, "n2"); !gone {
		t.Fatal("n2 not marked removed by the fence")
	}
	waitHeld(t, n2, false, 5*time.Second)
	r.Reason = "test"
	if _, err := s.Advance(ctx, r, handoff.PhaseAborted); err != nil {
		t.Fatal(err)
	}
	if gone, err := s.Removed(ctx, "n2"); err != nil || gone {
		t.Fatalf("n2 removed=%v (%v) after the abort, want a member again", gone, err)
	}
	// Its session learns it and holds again (a fresh lease).
	took, _ := waitHeld(t, n2, true, 5*time.Second)
	if n2.Removed() {
		t.Fatal("n2's session still says removed")
	}
	t.Logf("n2 held again %v after the abort", took)
	// A later change may still remove it for good.
	r, err = s.Begin(ctx, handoff.Record{ID: "leave-n2-again", Old: v1, New: view(2, "n0", "n1")})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = s.Advance(ctx, r, handoff.PhaseFencing); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fence(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, r); err != nil {
		t.Fatal(err)
	}
	if gone, _ := s.Removed(ctx, "n2"); !gone {
		t.Fatal("n2 not removed after the committed change")
	}
}

// TestFenceWaitsRecordedTTL: Fence waits the TTL a lost node recorded with
// its lease (not the operator's default), and nothing for a node whose
// lease already expired (it fenced itself before etcd expired it) or for
// a graceful leaver (paused and drained before the fence).
func TestFenceWaitsRecordedTTL(t *testing.T) {
	p := newPKI(t)
	e := p.embedded("etcd-0")
	s := p.store("operator", e.ClientURL) // TTL 2 s
	ctx := context.Background()
	v1 := view(1, "n0", "n1", "n2")
	if _, err := s.Init(ctx, v1); err != nil {
		t.Fatal(err)
	}
	put := func(id string, ttl time.Duration) {
		g, err := s.cli.Grant(ctx, int64(ttl/time.Second))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(memberInfo{TTLMillis: ttl.Milliseconds()})
		if _, err := s.cli.Put(ctx, s.o.memberKey(id), string(b), clientv3.WithLease(g.ID)); err != nil {
			t.Fatal(err)
		}
	}
	put("n1", 3*time.Second)
	put("n2", time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for { // n2's lease expires
		g, err := s.cli.Get(ctx, s.o.memberKey("n2"))
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Kvs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("n2's 1 s lease did not expire")
		}
		time.Sleep(100 * time.Millisecond)
	}
	fence := func(id string, old hostsplit.View, nw hostsplit.View, lost bool) time.Duration {
		r := handoff.Record{ID: "c-" + id, Old: old, New: nw}
		if lost {
			r.Lost = []hostsplit.NodeID{hostsplit.NodeID(id)}
		}
		r, err := s.Begin(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if r, err = s.Advance(ctx, r, handoff.PhaseFencing); err != nil {
			t.Fatal(err)
		}
		wait, err := s.Fence(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Advance(ctx, r, handoff.PhaseAborted); err != nil {
			t.Fatal(err)
		}
		return wait
	}
	if w := fence("n2", v1, view(2, "n0", "n1"), true); w != 0 {
		t.Errorf("n2's lease expired: Fence waits %v, want 0", w)
	}
	if w := fence("n1", v1, view(2, "n0", "n2"), false); w != 0 {
		t.Errorf("n1 leaves gracefully (not lost): Fence waits %v, want 0", w)
	}
	put("n1", 3*time.Second) // the graceful removal's abort un-removed it; its lease was revoked
	if w := fence("n1", v1, view(2, "n0", "n2"), true); w != 3*time.Second {
		t.Errorf("n1 lost, holding a lease with TTL 3s: Fence waits %v, want 3s (not the operator's 2s)", w)
	}
}
