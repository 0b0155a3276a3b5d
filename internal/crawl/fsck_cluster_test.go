package crawl

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/simweb"
)

// clusterCorruptionMatrix damages a member's spool, the store only a cluster
// member has, and its frontier, which also holds URLs its peers sent.
//
// A killed case is damaged as after a kill -9: the victim's spool.mark is
// the one its last refresh wrote (not a clean stop's: no applied marks).
func clusterCorruptionMatrix() []clusterCase {
	return []clusterCase{
		{corruptionCase{"spool", "spool/*.log", damTruncate, true}, false}, // pebble WAL: the newest batches
		{corruptionCase{"spool", "spool/*.log", damScribble, true}, false},
		{corruptionCase{"spool", "spool/MANIFEST-*", damDelete, true}, false},
		{corruptionCase{"frontier", "frontier", damDelete, false}, false},
		{corruptionCase{"spool", "spool/*.log", damTruncate, true}, true},
		{corruptionCase{"spool", "spool", damDelete, false}, true},
	}
}

type clusterCase struct {
	corruptionCase
	killed bool
}

func (c clusterCase) name() string {
	if c.killed {
		return c.corruptionCase.name() + "/killed"
	}
	return c.corruptionCase.name()
}

// startCorruptionCluster starts a 3-member cluster on the data dirs under
// root (node-i), with fresh certificates in pki; the first error of a
// StartMember is returned with the members started so far closed.
func startCorruptionCluster(t *testing.T, root, pki string, srv *simweb.Server, web *simweb.Web) ([]*Member, error) {
	t.Helper()
	members, seats, err := LoopbackCluster(pki, 3)
	if err != nil {
		t.Fatal(err)
	}
	var ms []*Member
	for _, seat := range seats {
		o := corruptionOptions(t, filepath.Join(root, seat.ID), srv, web)
		m, err := StartMember(MemberOptions{Node: o, Self: seat.ID, Members: members, TLS: seat.TLS,
			Listener: seat.Listener, PeerCacheSize: 1024})
		if err != nil {
			for _, m := range ms {
				m.Close()
			}
			for _, s := range seats[len(ms):] {
				s.Listener.Close()
			}
			return nil, fmt.Errorf("%s: %w", seat.ID, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// runCluster seeds every member and runs them until the cluster
// terminates, then closes them.
func runCluster(t *testing.T, ms []*Member, seeds []string, timeout time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		if err := m.Seed(ctx, seeds); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.Run(ctx) }()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("cluster did not terminate in %v", timeout)
	}
	for _, m := range ms {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

// Issue 23: a cluster member's spool holds the links of pages its crawl
// log records as done until their owner acknowledges them; a damaged spool
// must never lose them silently. A 3-node cluster is stopped part-way, its
// splitters first, as a kill would (the victim is the member whose spool
// then holds the most batches its peers never received); for each case a copy of the three data
// dirs has a store of that member damaged, then the cluster restarts.
// Either it resumes, or that member refuses to start (ErrDamaged naming
// the store) and Repair rebuilds it; the cluster then ends with the union
// of the crawl logs equal to the oracle's set.
func TestCorruptionMatrixCluster(t *testing.T) {
	web, srv, oracle := corruptionWeb(t)
	base := t.TempDir()
	start := time.Now()
	ms, err := startCorruptionCluster(t, base, filepath.Join(base, "pki"), srv, web)
	if err != nil {
		t.Fatal(err)
	}
	stopClusterMidway(t, ms, web, uint64(oracle.Size()/2))
	victim, spooled := spoolVictim(t, base, len(ms))
	baseCount := map[string]int{}
	for i := range ms {
		logURLsFrom(t, filepath.Join(base, fmt.Sprintf("node-%d", i), crawlLogFile), 0, baseCount)
	}
	t.Logf("base: %d of the oracle's %d URLs fetched in %v; %s's spool: %d batches (%d URLs) unacknowledged, %d archived",
		len(baseCount), oracle.Size(), time.Since(start).Round(time.Millisecond), victim, spooled.PendingBatches, spooled.PendingURLs, spooled.ArchivedBatches)
	if spooled.PendingBatches == 0 {
		t.Fatalf("%s's spool holds no unacknowledged batch: the matrix would not test losing one", victim)
	}
	cm := clusterMatrix{base: base, victim: victim, srv: srv, web: web, oracle: oracle, baseCount: baseCount}
	cases := clusterCorruptionMatrix()
	results := make([]clusterCaseResult, len(cases))
	sem := make(chan struct{}, len(cases)) // the crawls wait on politeness and the network mostly
	var cwg sync.WaitGroup
	for i, c := range cases {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := &results[i]
			r.c = c
			t.Run(c.name(), func(t *testing.T) { cm.run(t, i, c, r) })
		}()
	}
	cwg.Wait()
	var b strings.Builder
	refused, lost := 0, 0
	fmt.Fprintf(&b, "%-20s %-8s %-7s %-8s %-8s %5s %6s  %s\n", "victim's case", "damage", "after", "refused", "repaired", "lost", "twice", "error")
	for _, r := range results {
		after := "stop"
		if r.c.killed {
			after = "kill"
		}
		fmt.Fprintf(&b, "%-20s %-8s %-7s %-8v %-8v %5d %6d  %.110s\n", r.c.path, r.c.kind, after, r.refused, r.repaired, r.lost, r.twice, r.err)
		if r.refused {
			refused++
		}
		lost += r.lost
	}
	fmt.Fprintf(&b, "%d cases: %d refused and repaired, %d resumed as they were; %d URLs lost in all", len(results), refused, len(results)-refused, lost)
	t.Logf("cluster corruption matrix (base: %d fetched of %d in the 3 crawl logs; twice = fetched more than once over both runs):\n%s", len(baseCount), oracle.Size(), b.String())
}

// clusterCaseResult is what one case of the cluster matrix did.
type clusterCaseResult struct {
	c                 clusterCase
	refused, repaired bool
	lost, twice       int
	err               string
}

// stopClusterMidway crawls web with ms until they have fetched stopAt
// pages, then stops the splitters at once, as a kill would (the batches
// spooled in the last wire-coalescing window, 500 ms, are not yet sent),
// and closes the members.
func stopClusterMidway(t *testing.T, ms []*Member, web *simweb.Web, stopAt uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range ms {
		if err := m.Seed(ctx, web.Seeds()); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.Run(ctx) }()
	}
	for ctx.Err() == nil {
		var sum uint64
		for _, m := range ms {
			sum += m.Node.Stats().Fetches
		}
		if sum >= stopAt {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	for _, m := range ms {
		if err := m.Split.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// spoolVictim returns the member whose spool holds the most unsent batches.
func spoolVictim(t *testing.T, base string, n int) (victim string, spooled hostsplit.SpoolReport) {
	for i := range n {
		id := fmt.Sprintf("node-%d", i)
		rep, err := hostsplit.InspectSpool(filepath.Join(base, id, spoolDir), hostsplit.Limits{}, true)
		if err != nil || len(rep.Problems) > 0 {
			t.Fatalf("%s's spool: %+v, %v", id, rep, err)
		}
		if victim == "" || rep.PendingURLs > spooled.PendingURLs {
			victim, spooled = id, rep
		}
	}
	return victim, spooled
}

// clusterMatrix is the stopped cluster every case copies and damages.
type clusterMatrix struct {
	base, victim string
	srv          *simweb.Server
	web          *simweb.Web
	oracle       *simweb.OracleResult
	baseCount    map[string]int
}

// run copies the base cluster, damages the victim's store as case c says,
// restarts the cluster (repairing the victim if it refuses to start) and
// tallies the URLs lost and fetched twice into r.
func (cm clusterMatrix) run(t *testing.T, seed int, c clusterCase, r *clusterCaseResult) {
	base, victim, srv, web, oracle, baseCount := cm.base, cm.victim, cm.srv, cm.web, cm.oracle, cm.baseCount
	root := t.TempDir()
	offs := make([]int64, 3)
	for j := range offs {
		node := fmt.Sprintf("node-%d", j)
		copyDir(t, filepath.Join(base, node), filepath.Join(root, node))
		if fi, err := os.Stat(filepath.Join(root, node, crawlLogFile)); err == nil {
			offs[j] = fi.Size()
		}
	}
	dir0 := filepath.Join(root, victim)
	target := filepath.Join(dir0, c.path)
	if strings.Contains(c.path, "*") {
		target = pickFile(t, dir0, c.path, c.pick)
	}
	if c.killed {
		mark, ok, err := readSpoolMark(dir0)
		if err != nil || !ok {
			t.Fatalf("%s's spool mark: %v", victim, err)
		}
		mark.Clean, mark.Applied = false, nil
		if err := writeSpoolMark(dir0, mark); err != nil {
			t.Fatal(err)
		}
	}
	damage(t, target, c.kind, rand.New(rand.NewPCG(uint64(seed), 23)))
	pki := filepath.Join(root, "pki")
	ms, err := startCorruptionCluster(t, root, pki, srv, web)
	if err == nil {
		r.err = "started"
		err = runCluster(t, ms, web.Seeds(), 90*time.Second)
		if err != nil {
			t.Fatalf("resume of a damaged cluster: %v", err)
		}
	} else {
		r.refused, r.err = true, err.Error()
		t.Logf("refused: %v", err)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.store) || !strings.HasPrefix(err.Error(), victim) {
			t.Fatalf("refusal is not the victim's ErrDamaged naming the spool: %v", err)
		}
		rep, rerr := Repair(corruptionOptions(t, dir0, srv, web))
		if rerr != nil || !rep.Rebuilt || (rep.Spool == nil) == (c.store == "spool") {
			t.Fatalf("repair after %v: %+v, %v", err, rep, rerr)
		}
		r.repaired = true
		t.Logf("repair: %d URLs queued (%d from the old frontier, %d from crawl.log)", rep.Admitted, rep.FromFrontier, rep.FromLog)
		if sp := rep.Spool; sp != nil {
			t.Logf("spool rebuilt: opened %v, %d batches (%d URLs) to send, %d archived, %d skipped, %d applied marks restored; read error: %v",
				sp.Opened, sp.PendingBatches, sp.PendingURLs, sp.ArchivedBatches, sp.Skipped, sp.Applied, sp.ReadErr)
		}
		if ms, err = startCorruptionCluster(t, root, pki, srv, web); err != nil {
			t.Fatalf("start after repair: %v", err)
		}
		if err := runCluster(t, ms, web.Seeds(), 90*time.Second); err != nil {
			t.Fatalf("resume after repair: %v", err)
		}
	}
	count := maps2(baseCount)
	for j, off := range offs {
		logURLsFrom(t, filepath.Join(root, fmt.Sprintf("node-%d", j), crawlLogFile), off, count)
	}
	tallyCase(t, count, oracle, &r.lost, &r.twice)
}

// A running member refreshes spool.mark (markLoop), so that after a kill -9
// only the batches of the last interval can be lost unseen; Close writes a
// clean mark with the senders' applied marks.
func TestSpoolMarkRefreshedWhileRunning(t *testing.T) {
	defer func(d time.Duration) { spoolMarkEvery = d }(spoolMarkEvery)
	spoolMarkEvery = 20 * time.Millisecond
	root := t.TempDir()
	members, seats, err := LoopbackCluster(filepath.Join(root, "pki"), 2)
	if err != nil {
		t.Fatal(err)
	}
	var ms []*Member
	for _, s := range seats {
		m, err := StartMember(MemberOptions{Node: Options{DataDir: filepath.Join(root, s.ID), Workers: 1},
			Self: s.ID, Members: members, TLS: s.TLS, Listener: s.Listener})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	// URLs on hosts node-1 owns, routed by node-0.
	var remote []string
	for i := 0; len(remote) < 5; i++ {
		u := fmt.Sprintf("http://h%d.example/", i)
		if owner, _ := ms[0].Split.Ownership().Ring().OwnerOfURL(u); owner == "node-1" {
			remote = append(remote, u)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ms[0].Split.Route(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if err := ms[0].Split.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	dir0 := filepath.Join(root, "node-0")
	for {
		mark, ok, err := readSpoolMark(dir0)
		if err != nil {
			t.Fatal(err)
		}
		if ok && mark.Last["node-1"] >= 1 {
			if mark.Clean {
				t.Fatal("a running member's mark says clean")
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the mark of a running member was not refreshed: %+v", mark)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Wait for node-1 to apply the batch, then stop both.
	for ctx.Err() == nil && ms[1].Split.Stats().Total.ReceivedURLs < uint64(len(remote)) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, m := range ms {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	mark, ok, err := readSpoolMark(filepath.Join(root, "node-1"))
	if err != nil || !ok || !mark.Clean || mark.Applied["node-0"][1] < 1 {
		t.Fatalf("node-1's mark after Close: %+v, %v, %v", mark, ok, err)
	}
}
