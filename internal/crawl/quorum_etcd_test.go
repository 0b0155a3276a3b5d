package crawl

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/coord"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"github.com/sextant-crawler/sextant/simweb"
)

// quorumPlane is a 3-member embedded etcd (a real Raft cluster) under an
// elasticCluster: every member started from now on is fenced on a
// Session with all three endpoints.
type quorumPlane struct {
	t        *testing.T
	ms       []*coord.Embedded
	mu       sync.Mutex
	sessions map[string]*coord.Session
}

func (c *elasticCluster) withEtcdCluster(v1 hostsplit.View) *quorumPlane {
	t := c.t
	pki := filepath.Join(c.root, "pki")
	ca, err := tlsutil.LoadCA(filepath.Join(pki, "ca.pem"), filepath.Join(pki, "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"etcd-0", "etcd-1", "etcd-2"}
	var dirs []string
	var certs [][2][]byte
	for _, n := range names {
		cert, key, err := ca.Issue(n, []string{"127.0.0.1", "localhost"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, filepath.Join(c.root, n))
		certs = append(certs, [2][]byte{cert, key})
	}
	base := coord.EmbedOptions{CAPEM: ca.CertPEM, TickMs: 100, ElectionMs: uint(etcdElection.Milliseconds())}
	ms, err := coord.StartCluster(base, names, dirs, certs)
	if err != nil {
		t.Fatal(err)
	}
	p := &quorumPlane{t: t, ms: ms, sessions: map[string]*coord.Session{}}
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.ClientURL)
	}
	op, err := coord.Open(coord.Options{Endpoints: eps, TLS: clientTLS(c.operator()), TTL: etcdTTL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, s := range p.sessions {
			s.Close()
		}
		op.Close()
		for _, m := range p.ms {
			m.Kill() // nothing to hand over: no 8 s graceful stop each
			m.Close()
		}
	})
	if _, err := op.Init(c.ctx, v1); err != nil {
		t.Fatal(err)
	}
	c.control = func(id string) Control {
		tn, err := tlsutil.Load(filepath.Join(pki, "ca.pem"), filepath.Join(pki, id+".pem"), filepath.Join(pki, id+"-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := coord.NewSession(coord.Options{Endpoints: eps, TLS: clientTLS(tn), TTL: etcdTTL, ElectionTimeout: etcdElection}, hostsplit.NodeID(id))
		if err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		p.sessions[id] = s
		p.mu.Unlock()
		return s
	}
	return p
}

// leaderFirst reorders the members so that the leader is first.
func (p *quorumPlane) leaderFirst() {
	for i, m := range p.ms {
		if m.IsLeader() {
			p.ms[0], p.ms[i] = p.ms[i], p.ms[0]
			return
		}
	}
}

// heldAll reports whether every session is Held, and if not who and why.
func (p *quorumPlane) heldAll(want bool) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, s := range p.sessions {
		if held, why := s.Held(); held != want {
			return false, fmt.Sprintf("%s: held=%v %s", id, held, why)
		}
	}
	return true, ""
}

// waitAll waits until every session's Held is want and returns, per
// member, how long after since it first was.
func (p *quorumPlane) waitAll(want bool, since time.Time, within time.Duration) map[string]time.Duration {
	p.t.Helper()
	got := map[string]time.Duration{}
	deadline := since.Add(within)
	for {
		p.mu.Lock()
		for id, s := range p.sessions {
			if _, ok := got[id]; !ok {
				if held, _ := s.Held(); held == want {
					got[id] = time.Since(since).Round(time.Millisecond)
				}
			}
		}
		n := len(p.sessions)
		p.mu.Unlock()
		if len(got) == n {
			return got
		}
		if time.Now().After(deadline) {
			_, why := p.heldAll(want)
			p.t.Fatalf("not every member held=%v %v after %v: %s", want, within, since.Format("15:04:05.000"), why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// perMember is each member's fetch count.
func (c *elasticCluster) perMember() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]uint64{}
	for id, m := range c.ms {
		out[id] = m.Node.Stats().Fetches
	}
	return out
}

// requestsStarted counts the web's requests that started in [from, to).
func requestsStarted(srv *simweb.Server, from, to time.Time) (n int, last time.Time) {
	for _, reqs := range srv.Log() {
		for _, r := range reqs {
			if !r.Start.Before(from) && r.Start.Before(to) {
				n++
				if r.Start.After(last) {
					last = r.Start
				}
			}
		}
	}
	return n, last
}

// Issue 25, "Done when": with a 3-member etcd, killing one member does not
// stop the crawl, and losing etcd's quorum stops fetching within the
// lease TTL and resumes without loss when quorum returns. Three crawl
// members fenced on a 3-member embedded etcd (TTL 2 s, election timeout
// 0.5 s) crawl the small web: the leader is killed (the worst member to
// lose: no renewal succeeds until a new one is elected) and every member
// stays Held and fetches; a second member is killed and every member is
// fenced, no request starting later than TTL after the kill; both are
// restarted and every member is Held and fetches again. The union equals
// the oracle, no URL is fetched twice, no host ever sees two requests at
// once, and every fetch was made by the host's owner.
func TestQuorumLossCrawl(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, 3)
	// Slower than the other elastic tests, so that the crawl outlasts the
	// kills, the fence and the restore (about 20 s).
	c.nodeOpts = func(o *Options) { o.Frontier.MinDelay, o.Frontier.MaxDelay = 50*time.Millisecond, 300*time.Millisecond }
	v1 := hostsplit.View{Epoch: 1, Members: c.all}
	p := c.withEtcdCluster(v1)
	for i := range 3 {
		c.start(i, v1.Members, 1, false)
	}
	p.waitAll(true, time.Now(), 10*time.Second)
	c.waitFetches(300)

	// One of three down: nobody fenced, everybody fetches.
	p.leaderFirst()
	before := c.perMember()
	kill1 := time.Now()
	p.ms[0].Kill()
	for time.Since(kill1) < 2*etcdTTL {
		if ok, why := p.heldAll(true); !ok {
			t.Fatalf("fenced %v after killing 1 of 3 etcd members (the leader): %s", time.Since(kill1).Round(time.Millisecond), why)
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := c.perMember()
	n, _ := requestsStarted(c.srv, kill1, time.Now())
	t.Logf("1 of 3 etcd members (the leader) killed: %d requests started in the next %v; fetches per member %v -> %v", n, 2*etcdTTL, before, after)
	for id := range before {
		if after[id] == before[id] {
			t.Errorf("%s fetched nothing in the %v after 1 of 3 etcd members was killed", id, 2*etcdTTL)
		}
	}

	// Two of three down: no quorum, every member fenced within the TTL.
	kill2 := time.Now()
	p.ms[1].Kill()
	fenced := p.waitAll(false, kill2, etcdTTL)
	t.Logf("quorum lost: fenced after %v (TTL %v)", fenced, etcdTTL)
	time.Sleep(etcdTTL + time.Second) // in flight at the fence ends; nothing new starts
	for id, m := range c.ms {
		if f := m.Node.Stats().Fenced; f == "" {
			t.Errorf("%s: Stats.Fenced empty without a quorum", id)
		}
	}
	restore := time.Now()
	if n, last := requestsStarted(c.srv, kill2.Add(etcdTTL), restore); n > 0 {
		t.Errorf("%d requests started more than the TTL (%v) after quorum was lost, the last %v after", n, etcdTTL, last.Sub(kill2).Round(time.Millisecond))
	}
	_, lastIn := requestsStarted(c.srv, kill2, restore)
	t.Logf("last request started %v after quorum was lost", lastIn.Sub(kill2).Round(time.Millisecond))

	// Restore both: Held and fetching again.
	p.restart(0, 1)
	served := time.Now()
	resumed := p.waitAll(true, restore, 15*time.Second)
	t.Logf("restore (killed members' cleanup, restart, quorum) took %v; Held again %v after it began", served.Sub(restore).Round(time.Millisecond), resumed)
	before = c.perMember()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		after, idle := c.perMember(), 0
		for id := range before {
			if after[id] == before[id] {
				idle++
			}
		}
		if idle == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every member fetched again within 10 s of the restore: %v -> %v", before, after)
		}
	}
	t.Logf("every member fetched again %v after the restored members served", time.Since(served).Round(time.Millisecond))

	c.wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("cluster did not terminate in time")
	}
	for id, err := range c.errs {
		if err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	c.stopAll()
	c.checkUnion(0)
	c.checkOwners(v1)
	checkPageOverlaps(t, c.srv, kill2)
}

// restart restarts the killed members is (concurrently: each alone has no
// quorum to become ready with).
func (p *quorumPlane) restart(is ...int) {
	p.t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(is))
	for j, i := range is {
		wg.Add(1)
		go func() {
			defer wg.Done()
			old := p.ms[i]
			old.Close() // Kill's cleanup: Dir and ports free again
			m, err := coord.StartEmbedded(old.Options())
			errs[j] = err
			if err == nil {
				p.mu.Lock()
				p.ms[i] = m
				p.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			p.t.Fatal(err)
		}
	}
}

// checkPageOverlaps fails the test for every host that served two page
// requests at once (times logged relative to ref).
func checkPageOverlaps(t *testing.T, srv *simweb.Server, ref time.Time) {
	t.Helper()
	// Two requests to one host at once, robots.txt hops aside: a robots.txt
	// redirect from another host borrows this host's slot on the node that
	// follows it, not on the host's owner (robotsGate), so such a hop may
	// overlap the owner's fetch whatever etcd does.
	overlapping, hops := 0, 0
	for host, reqs := range srv.Log() {
		var pages []simweb.Request
		for _, r := range reqs {
			if r.Path != "/robots.txt" && !strings.HasPrefix(r.Path, "/robots/") {
				pages = append(pages, r)
			}
		}
		if simweb.MaxConcurrent(reqs) > 1 {
			hops++
		}
		if mc := simweb.MaxConcurrent(pages); mc > 1 {
			overlapping++
			t.Errorf("%s: %d requests at once", host, mc)
			for i := 1; i < len(pages); i++ {
				if a, b := pages[i-1], pages[i]; b.Start.Before(a.End) {
					t.Logf("  %s [%v, %v] and %s [%v, %v] after the reference", a.Path, a.Start.Sub(ref), a.End.Sub(ref), b.Path, b.Start.Sub(ref), b.End.Sub(ref))
				}
			}
		}
	}
	t.Logf("%d hosts with overlapping requests (%d counting robots.txt hops)", overlapping, hops)
}
