package crawl

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/logging"
)

// blackHole accepts connections on l and never answers (a peer whose
// process hangs, or a partition that drops packets after the handshake).
func blackHole(t *testing.T, l net.Listener) {
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
}

// No worker waits on a peer's status (issue 25, defect 5): with a peer that
// accepts connections and never answers, the termination check's status
// calls hang for their timeout (5 s). The workers keep fetching meanwhile,
// and a pause for a membership change stops them at once instead of when
// the check gives up.
func TestBlackHoledPeerDoesNotHoldWorkers(t *testing.T) {
	web, srv, _ := smallWeb(t, 1<<20)
	root := t.TempDir()
	members, seats, err := LoopbackCluster(filepath.Join(root, "pki"), 2)
	if err != nil {
		t.Fatal(err)
	}
	blackHole(t, seats[1].Listener)
	o := testNodeOptions(t, filepath.Join(root, seats[0].ID), srv, web.Domain())
	o.Workers = 4
	o.Frontier.MinDelay = 20 * time.Millisecond // a crawl that outlasts the test
	m, err := StartMember(MemberOptions{Node: o, Self: seats[0].ID, Members: members, TLS: seats[0].TLS, Listener: seats[0].Listener})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	// The first termination check dials the black hole ~100 ms after
	// Run starts and hangs until its status call times out (5 s).
	time.Sleep(time.Second)
	f1 := m.Node.Stats().Fetches
	time.Sleep(time.Second)
	f2 := m.Node.Stats().Fetches
	if f2 <= f1 {
		t.Fatalf("workers stopped fetching with a black-holed peer: %d then %d fetches", f1, f2)
	}
	start := time.Now()
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	if err := m.prepare(pctx, hostsplit.View{Epoch: 2, Members: members}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("%d fetches in the second second; paused in %v", f2-f1, took)
	if took > 1500*time.Millisecond {
		t.Errorf("pausing took %v with a black-holed peer: the workers' supervisor waited on the peer's status", took)
	}
	f3 := m.Node.Stats().Fetches
	time.Sleep(300 * time.Millisecond)
	if f4 := m.Node.Stats().Fetches; f4 != f3 {
		t.Errorf("%d fetches after the pause", f4-f3)
	}
}

// Removing a black-holed node with --lost (issue 25, defect 5): the
// survivors pause at once — no survivor's workers wait on the lost node's
// status, and the nodes are paused in parallel, not one after another.
func TestRemoveLostBlackHoledNode(t *testing.T) {
	web, srv, _ := smallWeb(t, 1<<20)
	root := t.TempDir()
	all, seats, err := LoopbackCluster(filepath.Join(root, "pki"), 4)
	if err != nil {
		t.Fatal(err)
	}
	blackHole(t, seats[3].Listener)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ms []*Member
	var wg sync.WaitGroup
	for _, seat := range seats[:3] {
		o := testNodeOptions(t, filepath.Join(root, seat.ID), srv, web.Domain())
		o.Workers = 4
		o.Frontier.MinDelay = 20 * time.Millisecond // a crawl that outlasts the test
		m, err := StartMember(MemberOptions{Node: o, Self: seat.ID, Members: all, TLS: seat.TLS, Listener: seat.Listener})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if err := m.Seed(ctx, web.Seeds()); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	fetches := func() (n uint64) {
		for _, m := range ms {
			n += m.Node.Stats().Fetches
		}
		return n
	}
	// The survivors' termination checks are now hanging on node-3.
	time.Sleep(time.Second)
	if fetches() == 0 {
		t.Fatal("no fetches")
	}
	v1, v2 := hostsplit.View{Epoch: 1, Members: all}, hostsplit.View{Epoch: 2, Members: all[:3]}
	rep, err := ChangeMembership(ctx, ChangeOptions{TLS: operatorTLS(t, filepath.Join(root, "pki")), Old: v1, New: v2, Lost: []hostsplit.NodeID{"node-3"}, Logger: logging.Test(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("--lost of a black-holed node: drained in %v, total %v", rep.Prepare, rep.Total)
	if rep.Prepare > 2*time.Second {
		t.Errorf("pausing the survivors took %v", rep.Prepare)
	}
	// COMMIT stops the senders to node-3, whose stream was still being
	// opened to the black hole (until the 5 s connect timeout).
	if rep.Commit > 2500*time.Millisecond {
		t.Errorf("COMMIT took %v", rep.Commit)
	}
}
