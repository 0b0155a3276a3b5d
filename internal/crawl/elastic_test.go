package crawl

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/logging"
	"github.com/sextant-crawler/sextant/simweb"
)

// elasticTrapBudget is the per-host page budget of the elastic tests (the
// largest non-trap host of simweb.SmallConfig admits about 260 URLs).
const elasticTrapBudget = 400

// elasticCluster is an in-process cluster whose membership changes.
type elasticCluster struct {
	t      *testing.T
	root   string
	web    *simweb.Web
	srv    *simweb.Server
	all    []hostsplit.Member
	seats  []LoopbackSeat
	ms     map[string]*Member
	errs   map[string]error
	mu     sync.Mutex
	wg     sync.WaitGroup
	ctx    context.Context
	logs   []string
	starts map[string]int
	stop   map[string]context.CancelFunc
	// control, if set, gives each started member its Control (etcd tests).
	control func(id string) Control
	// nodeOpts, if set, adjusts each started member's options.
	nodeOpts func(o *Options)
	// views, if set, are the test's views, for explainMissing.
	views []hostsplit.View
}

func newElasticCluster(t *testing.T, ctx context.Context, n int) *elasticCluster {
	web, srv, _ := smallWeb(t, 1<<20)
	root := t.TempDir()
	all, seats, err := LoopbackCluster(filepath.Join(root, "pki"), n)
	if err != nil {
		t.Fatal(err)
	}
	return &elasticCluster{t: t, root: root, web: web, srv: srv, all: all, seats: seats, ms: map[string]*Member{},
		errs: map[string]error{}, ctx: ctx, starts: map[string]int{}, stop: map[string]context.CancelFunc{}}
}

// start starts seat i on members (epoch), joining or not, and runs it.
func (c *elasticCluster) start(i int, members []hostsplit.Member, epoch uint64, joining bool) *Member {
	t := c.t
	seat := c.seats[i]
	o := testNodeOptions(t, filepath.Join(c.root, seat.ID), c.srv, c.web.Domain())
	o.Workers = 8
	// Trap hosts are left out of the oracle comparison; a smaller budget
	// shortens the crawl's tail (each trap host is crawled sequentially).
	o.MaxPagesPerHost = elasticTrapBudget
	if c.nodeOpts != nil {
		c.nodeOpts(&o)
	}
	var ctl Control
	if c.control != nil {
		ctl = c.control(seat.ID)
	}
	m, err := StartMember(MemberOptions{Node: o, Self: seat.ID, Members: members, TLS: seat.TLS, Listener: seat.Listener,
		PeerCacheSize: 1024, Epoch: epoch, Joining: joining, Control: ctl})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Seed(c.ctx, c.web.Seeds()); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.ms[seat.ID] = m
	if c.starts[seat.ID] == 0 {
		c.logs = append(c.logs, filepath.Join(c.root, seat.ID, "crawl.log"))
	}
	c.starts[seat.ID]++
	rctx, stop := context.WithCancel(c.ctx)
	c.stop[seat.ID] = stop
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := m.Run(rctx)
		c.mu.Lock()
		c.errs[seat.ID] = err
		c.mu.Unlock()
	}()
	return m
}

func (c *elasticCluster) fetches() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n uint64
	for _, m := range c.ms {
		n += m.Node.Stats().Fetches
	}
	return n
}

func (c *elasticCluster) waitFetches(n uint64) {
	for c.fetches() < n {
		if c.ctx.Err() != nil {
			c.t.Fatal("timed out waiting for progress")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *elasticCluster) change(old, nw hostsplit.View) ChangeReport {
	c.t.Helper()
	rep, err := ChangeMembership(c.ctx, ChangeOptions{TLS: c.operator(), Old: old, New: nw, Logger: logging.Test(c.t)})
	if err != nil {
		c.t.Fatal(err)
	}
	return rep
}

// movedShare is the share of the web's hosts whose owner differs between
// the two views.
func movedShare(web *simweb.Web, a, b hostsplit.View) float64 {
	ra, _ := hostsplit.NewRing(a.IDs(), false)
	rb, _ := hostsplit.NewRing(b.IDs(), false)
	moved, n := 0, 0
	for _, h := range web.Hosts() {
		n++
		if ra.Owner(h) != rb.Owner(h) {
			moved++
		}
	}
	return float64(moved) / float64(n)
}

// checkUnion checks the union of the crawl logs against the oracle, trap
// hosts aside (the oracle models another budget; they are held to
// elasticTrapBudget cluster-wide), and that no URL was fetched twice.
func (c *elasticCluster) checkUnion(maxRepeats int) {
	t := c.t
	oracle, err := c.web.Oracle(c.web.Seeds(), simweb.Rules{BodyCap: 1 << 20, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	got, dups := fetchedURLs(t, c.logs...)
	var rest []string
	traps := 0
	perTrap := map[string]int{}
	for _, u := range got {
		trap := false
		for _, h := range oracle.TrapHosts {
			if strings.HasPrefix(u, "http://"+h+"/") {
				trap = true
				perTrap[h]++
			}
		}
		if trap {
			traps++
		} else {
			rest = append(rest, u)
		}
	}
	if len(dups) > maxRepeats {
		t.Errorf("%d URLs fetched more than once cluster-wide (allowed %d), e.g. %v", len(dups), maxRepeats, dups[:min(5, len(dups))])
	}
	if err := oracle.Check(rest); err != nil {
		t.Errorf("union of fetched URLs (trap hosts aside) differs from the oracle's (%d fetched, oracle %d): %v", len(rest), oracle.Size(), err)
		if c.views != nil {
			slices.Sort(rest)
			c.explainMissing(oracle.Fetched, rest, c.views...)
		}
	}
	// The per-host budget moves with the host: cluster-wide, no trap host
	// has more pages than one node would admit.
	for h, n := range perTrap {
		if n > elasticTrapBudget {
			t.Errorf("trap host %s: %d pages fetched cluster-wide, budget %d", h, n, elasticTrapBudget)
		}
	}
	t.Logf("pages per trap host %v (budget %d)", perTrap, elasticTrapBudget)
	t.Logf("fetched %d URLs (%d on trap hosts), %d fetched twice", len(got), traps, len(dups))
}

// checkOwners checks that every crawl-log line was fetched by the owner of
// its host under the view of the line's epoch: a node never fetches a host
// it no longer (or does not yet) own.
func (c *elasticCluster) checkOwners(views ...hostsplit.View) {
	t := c.t
	var all []LogEntry
	for _, p := range c.logs {
		es, err := ReadLogFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, es...)
	}
	foreign, err := ForeignFetches(all, views...)
	if err != nil {
		t.Error(err)
	}
	for _, e := range foreign[:min(10, len(foreign))] {
		t.Errorf("%s fetched %s under epoch %d, not owning its host", e.Node, e.URL, e.Epoch)
	}
	perEpoch := map[uint64]int{}
	for _, e := range all {
		perEpoch[e.Epoch]++
	}
	t.Logf("%d crawl-log lines by epoch %v: %d by a node not owning the host", len(all), perEpoch, len(foreign))
}

// Issue 10: start 2 nodes, add a third mid-crawl, later remove one
// gracefully. The union of fetched URLs equals the oracle's set, no URL is
// fetched twice, and about 1/N of the hosts move at each change.
func TestElasticJoinThenLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, 3)
	v1 := hostsplit.View{Epoch: 1, Members: c.all[:2]}
	v2 := hostsplit.View{Epoch: 2, Members: c.all}
	v3 := hostsplit.View{Epoch: 3, Members: c.all[1:]}
	c.views = []hostsplit.View{v1, v2, v3}
	c.start(0, v1.Members, 1, false)
	c.start(1, v1.Members, 1, false)
	c.waitFetches(600)

	// Add node-2.
	c.start(2, v2.Members, 0, true)
	rep := c.change(v1, v2)
	share := movedShare(c.web, v1, v2)
	t.Logf("join: moved share of hosts %.3f (1/3 expected); hand-off %d hosts, %d queued + %d fetched URLs in %d batches, %d wire bytes (%.1f B/URL, %.1f%% of raw); prepare %v, commit %v (slowest hand-off %v), total %v",
		share, rep.HandoffHosts, rep.HandoffQueued, rep.HandoffSeen, rep.HandoffBatches, rep.HandoffWireBytes,
		float64(rep.HandoffWireBytes)/float64(max(1, rep.HandoffQueued+rep.HandoffSeen)),
		100*float64(rep.HandoffWireBytes)/float64(max(1, rep.HandoffRawBytes)), rep.Prepare, rep.Commit, rep.MaxHandoff, rep.Total)
	if share < 0.15 || share > 0.5 {
		t.Errorf("join moved %.3f of the hosts, want about 1/3", share)
	}
	if rep.HandoffQueued+rep.HandoffSeen == 0 {
		t.Error("the join handed nothing over")
	}
	before := c.fetches()
	c.waitFetches(before + 600)

	// Remove node-0 gracefully.
	rep = c.change(v2, v3)
	share = movedShare(c.web, v2, v3)
	t.Logf("leave: moved share of hosts %.3f (1/3 expected); hand-off %d hosts, %d queued + %d fetched URLs in %d batches, %d wire bytes (%.1f B/URL, %.1f%% of raw); prepare %v, commit %v (slowest hand-off %v), total %v",
		share, rep.HandoffHosts, rep.HandoffQueued, rep.HandoffSeen, rep.HandoffBatches, rep.HandoffWireBytes,
		float64(rep.HandoffWireBytes)/float64(max(1, rep.HandoffQueued+rep.HandoffSeen)),
		100*float64(rep.HandoffWireBytes)/float64(max(1, rep.HandoffRawBytes)), rep.Prepare, rep.Commit, rep.MaxHandoff, rep.Total)
	if share < 0.15 || share > 0.5 {
		t.Errorf("leave moved %.3f of the hosts, want about 1/3", share)
	}
	if p := c.ms["node-0"].Phase(); p != PhaseRemoved {
		t.Errorf("node-0 phase %q after its removal", p)
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
	time.Sleep(300 * time.Millisecond) // let late peers see termination
	for id, m := range c.ms {
		if m.Phase() == PhaseRemoved {
			if n := m.Node.FrontierLen(); n != 0 {
				t.Errorf("removed %s still queues %d URLs", id, n)
			}
		}
		fs, st := m.Node.fr.Stats(), m.Node.Stats()
		t.Logf("%s: frontier budget dropped %d, lowered %d; fetch retries %d, errors %d; DUE %+v", id, fs.BudgetDropped, fs.BudgetLowered, st.FetchRetries, st.FetchErr, m.Node.due.Stats())
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}
	c.checkUnion(0)
	c.checkOwners(v1, v2, v3)
	t.Logf("%d hosts in the web", c.web.NumHosts())
}

// Issue 10, permanent loss: node-2 dies for good mid-crawl (its data is
// gone); the operator removes it with Lost. Its hosts are re-owned, the
// batches spooled for it are re-routed, and every URL a survivor had sent
// it (acknowledged: kept in the survivor's archive) is re-sent to the new
// owners with the seeds, so its hosts are crawled again. The test checks
// that the survivors finish, that each fetched only hosts it owned, that
// the union of fetched URLs is the oracle's set (trap hosts aside), that
// every page node-2 had fetched was crawled again, and that those
// re-crawls are the only URLs fetched twice; it counts them.
func TestElasticLostNode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a three-node crawl (~20 s)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, 3)
	v1 := hostsplit.View{Epoch: 1, Members: c.all}
	v2 := hostsplit.View{Epoch: 2, Members: c.all[:2]}
	for i := range 3 {
		c.start(i, v1.Members, 1, false)
	}
	c.waitFetches(1200)
	// What the survivors keep for node-2 (acknowledged batches, re-sent
	// if it is lost), in encoded bytes per URL.
	var archURLs, archBytes uint64
	c.mu.Lock()
	for _, id := range []string{"node-0", "node-1"} {
		u, b, err := c.ms[id].Split.Spool().ArchiveSize("node-2")
		if err != nil {
			t.Fatal(err)
		}
		archURLs, archBytes = archURLs+u, archBytes+b
	}
	c.mu.Unlock()
	t.Logf("archive for node-2 on the survivors: %d URLs, %d bytes (%.1f B/URL)", archURLs, archBytes, float64(archBytes)/float64(max(archURLs, 1)))
	// node-2 is lost: stop it and never look at its state again (its
	// crawl log is read below only to count the re-crawl).
	c.mu.Lock()
	lost := c.ms["node-2"]
	delete(c.ms, "node-2")
	c.stop["node-2"]()
	c.mu.Unlock()
	if err := lost.Close(); err != nil {
		t.Log(err)
	}
	rep, err := ChangeMembership(ctx, ChangeOptions{TLS: c.operator(), Old: v1, New: v2, Lost: []hostsplit.NodeID{"node-2"}, Logger: logging.Test(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loss handled in %v (drain %v, commit %v)", rep.Total, rep.Prepare, rep.Commit)
	c.wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("survivors did not terminate in time")
	}
	for id, err := range c.errs {
		if err != nil && id != "node-2" {
			t.Errorf("%s: %v", id, err)
		}
	}
	for _, m := range c.ms {
		m.Close()
	}
	before, after := lostNodeOwnership(t, c.logs, v1, v2)
	oracle, recrawled, got, dups, perTrap := checkLostNodeRecrawl(t, c, before, after)
	var resent uint64
	for _, m := range c.ms {
		resent += m.resent.Load()
	}
	t.Logf("node-2 fetched %d URLs before its loss; survivors re-sent %d URLs they had sent it, fetched %d URLs of its hosts after, %d of them again (re-crawled); %d URLs fetched twice cluster-wide; %d URLs fetched (oracle %d + traps %v)",
		len(before), resent, len(after), recrawled, len(dups), len(got), oracle.Size(), perTrap)
}

// lostNodeOwnership reads the crawl logs: what node-2 fetched (before its
// loss), and what the survivors fetched on its old hosts (after); every
// line must be by its host's owner (v1's, v2's for node-2's old hosts).
func lostNodeOwnership(t *testing.T, logs []string, v1, v2 hostsplit.View) (before map[string]bool, after []string) {
	ring1, _ := hostsplit.NewRing(v1.IDs(), false)
	ring2, _ := hostsplit.NewRing(v2.IDs(), false)
	before = map[string]bool{}
	for _, p := range logs {
		es, err := ReadLogFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			h, _ := hostsplit.Host(e.URL)
			switch {
			case e.Node == "node-2":
				before[e.URL] = true
			case ring1.Owner(h) == "node-2":
				after = append(after, e.URL)
				if string(ring2.Owner(h)) != e.Node {
					t.Errorf("%s fetched %s owned by %s", e.Node, e.URL, ring2.Owner(h))
				}
			case string(ring1.Owner(h)) != e.Node:
				t.Errorf("%s fetched %s owned by %s", e.Node, e.URL, ring1.Owner(h))
			}
		}
	}
	return before, after
}

// checkLostNodeRecrawl checks that everything node-2 had fetched was
// crawled again and that those re-crawls are the only repeats, and the
// union against the oracle (trap hosts aside, their budgets bounded).
func checkLostNodeRecrawl(t *testing.T, c *elasticCluster, before map[string]bool, after []string) (oracle *simweb.OracleResult, recrawled int, got, dups []string, perTrap map[string]int) {
	oracle, err := c.web.Oracle(c.web.Seeds(), simweb.Rules{BodyCap: 1 << 20, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	trapHost := func(u string) string {
		for _, h := range oracle.TrapHosts {
			if strings.HasPrefix(u, "http://"+h+"/") {
				return h
			}
		}
		return ""
	}
	// Everything node-2 had fetched (trap hosts aside: their endless pages
	// are fetched up to a budget, not necessarily the same ones) is
	// crawled again by a survivor, from the seeds and the URLs the
	// survivors re-sent at COMMIT, then from the links of the re-crawled
	// pages. Those re-crawls are the only URLs fetched twice.
	afterSet := map[string]bool{}
	for _, u := range after {
		afterSet[u] = true
	}
	for u := range before {
		switch {
		case afterSet[u]:
			recrawled++
		case trapHost(u) == "":
			t.Errorf("%s, fetched by node-2 before its loss, was not crawled again", u)
		}
	}
	got, dups = fetchedURLs(t, c.logs...)
	for _, u := range dups {
		if !before[u] {
			t.Errorf("%s fetched twice and not by node-2", u)
		}
	}
	var rest []string
	perTrap = map[string]int{}
	for _, u := range got {
		if h := trapHost(u); h != "" {
			perTrap[h]++
		} else {
			rest = append(rest, u)
		}
	}
	if err := oracle.Check(rest); err != nil {
		t.Errorf("union of fetched URLs (trap hosts aside) differs from the oracle's (%d fetched, oracle %d): %v", len(rest), oracle.Size(), err)
		if c.views != nil {
			slices.Sort(rest)
			c.explainMissing(oracle.Fetched, rest, c.views...)
		}
	}
	// node-2's admitted counts died with it: its trap hosts start a fresh
	// budget at their new owner.
	for h, n := range perTrap {
		if n > 2*oracle.Rules.MaxPagesPerHost {
			t.Errorf("trap host %s: %d pages fetched, budget %d (twice for a lost owner)", h, n, oracle.Rules.MaxPagesPerHost)
		}
	}
	return oracle, recrawled, got, dups, perTrap
}

// ForeignFetches flags a line fetched by a node that did not own the host
// under the line's epoch, and a line whose epoch has no view.
func TestElasticForeignFetches(t *testing.T) {
	a, b := hostsplit.Member{ID: "a", Addr: "x:1"}, hostsplit.Member{ID: "b", Addr: "x:2"}
	v1 := hostsplit.View{Epoch: 1, Members: []hostsplit.Member{a}}
	v2 := hostsplit.View{Epoch: 2, Members: []hostsplit.Member{a, b}}
	r2, _ := hostsplit.NewRing(v2.IDs(), false)
	var hostB string // a host b owns in v2
	for i := 0; hostB == ""; i++ {
		if h := fmt.Sprintf("h%d.sim.test", i); r2.Owner(h) == "b" {
			hostB = h
		}
	}
	u := "http://" + hostB + "/p"
	for _, c := range []struct {
		e       LogEntry
		foreign bool
		err     bool
	}{
		{LogEntry{Node: "a", URL: u, Epoch: 1}, false, false},                // a owned everything in v1
		{LogEntry{Node: "a", URL: u, Epoch: 2}, true, false},                 // a no longer owns it
		{LogEntry{Node: "b", URL: u, Epoch: 2}, false, false},                // its new owner
		{LogEntry{Node: "b", URL: u + "/robots.txt", Epoch: 1}, true, false}, // before b owned it
		{LogEntry{Node: "a", URL: u, Epoch: 0}, false, true},                 // no epoch
		{LogEntry{Node: "a", URL: u, Epoch: 7}, false, true},                 // unknown view
	} {
		foreign, err := ForeignFetches([]LogEntry{c.e}, v1, v2)
		if (len(foreign) == 1) != c.foreign || (err != nil) != c.err || (err != nil && !errors.Is(err, ErrNoView)) {
			t.Errorf("%+v: foreign %v, err %v", c.e, foreign, err)
		}
	}
}
