package crawl

import (
	"context"
	"crypto/tls"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/coord"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/logging"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// etcdTTL is the members' lease TTL in the etcd-backed elastic tests.
const etcdTTL = 2 * time.Second

// etcdElection is the embedded etcd's election timeout: TTL 2 s needs one
// of at most 0.55 s (coord.Options.ElectionTimeout).
const etcdElection = 500 * time.Millisecond

// etcdPlane is an embedded etcd for an elasticCluster: the operator's
// Store, and a Session (the member's Control) per node.
type etcdPlane struct {
	t        *testing.T
	e        *coord.Embedded
	op       *coord.Store
	sessions map[string]*coord.Session
}

func clientTLS(tn *tlsutil.Node) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{tn.Cert}, RootCAs: tn.Pool}
}

// withEtcd starts an embedded etcd with the cluster's CA, stores v1 as the
// cluster's view and makes every member started from now on fenced on a
// Session of its own (its node certificate).
func (c *elasticCluster) withEtcd(v1 hostsplit.View) *etcdPlane {
	t := c.t
	pki := filepath.Join(c.root, "pki")
	ca, err := tlsutil.LoadCA(filepath.Join(pki, "ca.pem"), filepath.Join(pki, "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue("etcd-0", []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e, err := coord.StartEmbedded(coord.EmbedOptions{Dir: filepath.Join(c.root, "etcd"), CAPEM: ca.CertPEM, CertPEM: cert, KeyPEM: key,
		ElectionMs: uint(etcdElection.Milliseconds())})
	if err != nil {
		t.Fatal(err)
	}
	p := &etcdPlane{t: t, e: e, sessions: map[string]*coord.Session{}}
	p.op, err = coord.Open(coord.Options{Endpoints: []string{e.ClientURL}, TLS: clientTLS(c.operator()), TTL: etcdTTL})
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: the members (stopAll, deferred by
	// the test) first, then the sessions, the operator, etcd.
	t.Cleanup(func() {
		for _, s := range p.sessions {
			s.Close()
		}
		p.op.Close()
		e.Close()
	})
	if _, err := p.op.Init(c.ctx, v1); err != nil {
		t.Fatal(err)
	}
	c.control = func(id string) Control {
		tn, err := tlsutil.Load(filepath.Join(pki, "ca.pem"), filepath.Join(pki, id+".pem"), filepath.Join(pki, id+"-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := coord.NewSession(coord.Options{Endpoints: []string{e.ClientURL}, TLS: clientTLS(tn), TTL: etcdTTL, ElectionTimeout: etcdElection}, hostsplit.NodeID(id))
		if err != nil {
			t.Fatal(err)
		}
		p.sessions[id] = s
		return s
	}
	return p
}

// change runs a membership change recorded in etcd.
func (p *etcdPlane) change(c *elasticCluster, old, nw hostsplit.View) ChangeReport {
	p.t.Helper()
	rep, err := ChangeMembership(c.ctx, ChangeOptions{TLS: c.operator(), Old: old, New: nw, Store: p.op, Logger: logging.Test(p.t)})
	if err != nil {
		p.t.Fatal(err)
	}
	return rep
}

// checkRecord checks etcd's view and latest change record.
func (p *etcdPlane) checkRecord(ctx context.Context, epoch uint64, phase handoff.Phase) {
	p.t.Helper()
	v, err := p.op.View(ctx)
	if err != nil || v.Epoch != epoch {
		p.t.Errorf("etcd's view: epoch %d (%v), want %d", v.Epoch, err, epoch)
	}
	r, ok, err := p.op.Current(ctx)
	if err != nil || !ok || r.Phase != phase {
		p.t.Errorf("etcd's change record: %s %s ok=%v err=%v, want %s", r.ID, r.Phase, ok, err, phase)
	}
}

// waitHeld waits until the sessions of ids are all Held (on etcd's view:
// Held implies the member adopted its epoch).
func (p *etcdPlane) waitHeld(ids ...hostsplit.NodeID) {
	p.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, id := range ids {
		for {
			held, why := p.sessions[string(id)].Held()
			if held {
				break
			}
			if time.Now().After(deadline) {
				p.t.Errorf("%s not held 5 s after the change: %s", id, why)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Issue 25, the two halves joined: a 3-node cluster fenced on etcd does a
// graceful join and a graceful leave mid-crawl, each recorded in etcd by
// ChangeMembership (ChangeOptions.Store = coord.Store). Without the join
// every member stays fenced after the first change (etcd's view would be
// another epoch than the one it adopted). The union equals the oracle, no
// URL is fetched twice, nobody fetched a host it did not own, and after
// each change every member of the new view is Held on the new epoch; the
// leaver, whose lease the change revoked, still hands everything over.
func TestElasticEtcdJoinThenLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, 3)
	v1 := hostsplit.View{Epoch: 1, Members: c.all[:2]}
	v2 := hostsplit.View{Epoch: 2, Members: c.all}
	v3 := hostsplit.View{Epoch: 3, Members: c.all[1:]}
	p := c.withEtcd(v1)
	c.start(0, v1.Members, 1, false)
	c.start(1, v1.Members, 1, false)
	p.waitHeld(v1.IDs()...)
	c.waitFetches(600)

	c.start(2, v2.Members, 0, true)
	rep := p.change(c, v1, v2)
	t.Logf("join: prepare %v, commit %v, total %v, %d queued + %d fetched URLs handed over", rep.Prepare, rep.Commit, rep.Total, rep.HandoffQueued, rep.HandoffSeen)
	p.checkRecord(ctx, 2, handoff.PhaseDone)
	p.waitHeld(v2.IDs()...)
	before := c.fetches()
	c.waitFetches(before + 600)

	rep = p.change(c, v2, v3)
	t.Logf("leave: prepare %v, commit %v, total %v, %d queued + %d fetched URLs handed over", rep.Prepare, rep.Commit, rep.Total, rep.HandoffQueued, rep.HandoffSeen)
	if rep.HandoffQueued+rep.HandoffSeen == 0 {
		t.Error("the leave handed nothing over")
	}
	p.checkRecord(ctx, 3, handoff.PhaseDone)
	p.waitHeld(v3.IDs()...)
	// A graceful leaver's lease is revoked without a wait (it confirmed it
	// stopped): its session learns of the removal at its next renewal.
	removedBy := time.Now().Add(2 * etcdTTL)
	for !p.sessions["node-0"].Removed() && time.Now().Before(removedBy) {
		time.Sleep(20 * time.Millisecond)
	}
	if !p.sessions["node-0"].Removed() {
		t.Errorf("node-0's session does not know it was removed %v after its removal", 2*etcdTTL)
	}
	if ph := c.ms["node-0"].Phase(); ph != PhaseRemoved {
		t.Errorf("node-0 phase %q after its removal", ph)
	}
	c.wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("cluster did not terminate in time")
	}
	for id, err := range c.errs {
		if err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	if n := c.ms["node-0"].Node.FrontierLen(); n != 0 {
		t.Errorf("removed node-0 still queues %d URLs", n)
	}
	time.Sleep(300 * time.Millisecond) // let late peers see termination
	c.stopAll()
	c.checkUnion(0)
	c.checkOwners(v1, v2, v3)
}

// Issue 25 defects 2 with etcd: a failed add (the new node's address
// answers nothing) recorded in etcd rolls back by its deadline: the record
// is aborted there, etcd's view stays epoch 1, and the members are Held
// and fetching again.
func TestFailedAddEtcdRollsBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, 2)
	v1 := hostsplit.View{Epoch: 1, Members: c.all}
	p := c.withEtcd(v1)
	defer c.stopAll()
	for i := range 2 {
		c.start(i, v1.Members, 1, false)
	}
	p.waitHeld(v1.IDs()...)
	c.waitFetches(200)
	v2 := hostsplit.View{Epoch: 2, Members: append(append([]hostsplit.Member{}, c.all...), hostsplit.Member{ID: "node-9", Addr: closedAddr(t)})}
	start := time.Now()
	_, err := ChangeMembership(ctx, ChangeOptions{TLS: c.operator(), Old: v1, New: v2, Store: p.op, Timeout: 3 * time.Second, Logger: logging.Test(t)})
	if !errors.Is(err, handoff.ErrTimeout) {
		t.Fatalf("error %v, want handoff.ErrTimeout", err)
	}
	t.Logf("change failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	p.checkRecord(ctx, 1, handoff.PhaseAborted)
	p.waitHeld(v1.IDs()...)
	before := c.fetches()
	c.waitFetches(before + 50) // fetching resumed (c.ctx bounds the wait)
	for _, m := range c.ms {
		if ph := m.Phase(); ph != PhaseRunning {
			t.Errorf("%s: phase %q after the rollback", m.self, ph)
		}
	}
}
