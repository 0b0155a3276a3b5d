package crawl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/killtest"
	"github.com/sextant-crawler/sextant/internal/logging"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"github.com/sextant-crawler/sextant/simweb"
)

// Environment of a node child of TestElasticKillDuringHandoff.
const (
	ekRootEnv    = "SEXTANT_ELASTICKILL_ROOT"
	ekIndexEnv   = "SEXTANT_ELASTICKILL_INDEX"
	ekAddrsEnv   = "SEXTANT_ELASTICKILL_ADDRS" // every seat's address
	ekMembersEnv = "SEXTANT_ELASTICKILL_N"     // members of the first view
	ekJoinEnv    = "SEXTANT_ELASTICKILL_JOIN"  // "1": start joining the full view
	ekWebEnv     = "SEXTANT_ELASTICKILL_WEB"
	ekCrashEnv   = "SEXTANT_ELASTICKILL_CRASH" // comma-separated steps at which to die once each
	ekKillMe     = ".kill-me"                  // file a child writes to be SIGKILLed
	ekWorkers    = 6
)

// TestElasticKillChild is one node of TestElasticKillDuringHandoff. It
// does nothing in a normal run.
func TestElasticKillChild(t *testing.T) {
	root := os.Getenv(ekRootEnv)
	if root == "" {
		t.Skip("child of TestElasticKillDuringHandoff only")
	}
	idx, _ := strconv.Atoi(os.Getenv(ekIndexEnv))
	addrs := strings.Split(os.Getenv(ekAddrsEnv), ",")
	n, _ := strconv.Atoi(os.Getenv(ekMembersEnv))
	joining := os.Getenv(ekJoinEnv) == "1"
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	all := make([]hostsplit.Member, len(addrs))
	for i, a := range addrs {
		all[i] = hostsplit.Member{ID: hostsplit.NodeID(fmt.Sprintf("node-%d", i)), Addr: a}
	}
	members := all[:n]
	if joining {
		members = all
	}
	id := string(all[idx].ID)
	pki := filepath.Join(root, "pki")
	cert, key := tlsutil.NodeFiles(pki, id)
	tn, err := tlsutil.Load(filepath.Join(pki, "ca.pem"), cert, key)
	if err != nil {
		t.Fatal(err)
	}
	lf, err := NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{web.Domain()}, MaxRepeatedSegments: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, id)
	handoffChunk = 40 // several chunks per hand-off, so a kill can fall between them
	// die stops at each step of SEXTANT_ELASTICKILL_CRASH once (a marker
	// file remembers it across restarts) and asks the parent to SIGKILL
	// this process, which it does while the step blocks here (the rest of
	// the process runs on meanwhile: the kill lands at an arbitrary point
	// shortly after the step).
	die := func(step string) {
		if !slices.Contains(strings.Split(os.Getenv(ekCrashEnv), ","), step) {
			return
		}
		marker := filepath.Join(root, id+".crashed-"+step)
		if _, err := os.Stat(marker); err == nil {
			return
		}
		if err := os.WriteFile(marker, nil, 0o644); err != nil {
			panic(err)
		}
		fmt.Fprintf(os.Stderr, "%s: at step %q, waiting for SIGKILL\n", id, step)
		if err := os.WriteFile(filepath.Join(root, id+ekKillMe), []byte(step), 0o644); err != nil {
			panic(err)
		}
		select {}
	}
	// The receiving side: "seen" and "queued" once a hand-off batch is
	// applied, before it is acknowledged.
	testDeliverHook = die
	m, err := StartMember(MemberOptions{
		Node: Options{
			DataDir: dir, Workers: ekWorkers,
			Fetcher: fetcher.Options{AllowPrivate: true, Resolve: map[string]string{web.Domain(): os.Getenv(ekWebEnv)}, TLSConfig: childTLS(t),
				FetchTimeout: 3 * time.Second, BodyCap: killBodyCap},
			Frontier: frontier.Options{MinDelay: 0, Factor: 2, MaxDelay: 50 * time.Millisecond,
				FailureBackoff: 10 * time.Millisecond, MaxFailureBackoff: 100 * time.Millisecond},
			DUEFlushInterval: 50 * time.Millisecond,
			MaxPagesPerHost:  elasticTrapBudget,
			Filter:           lf,
		},
		Self: id, Members: members, TLS: tn, PeerCacheSize: 1024, Joining: joining,
		testHandoffHook: die})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	if err := m.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	runErr := m.Run(ctx)
	time.Sleep(3 * time.Second) // peers may still need this node's Status
	if err := m.Close(); err != nil {
		t.Error(err)
	}
	if runErr != nil || ctx.Err() != nil {
		t.Fatalf("%s: run %v, ctx %v", id, runErr, ctx.Err())
	}
}

// Issue 10: a node is killed (SIGKILL, from the parent) in the middle of a
// hand-off and restarted on its data dir: the membership change
// completes, nothing is lost and nothing is fetched twice beyond the
// fetches cancelled by the pause (in-flight URLs).
//
// The old owner (node-0) is killed at three points of its hand-off, one
// after the other in one run (each restart resumes the hand-off, which the
// next kill interrupts again): "staged", its moved hosts' queued URLs have
// left the frontier, none is spooled; "spooled", a 40-URL chunk is spooled
// with its resume mark but still staged; "chunk", between two chunks.
// The new owner (node-2, joining) is killed once it has applied its first
// batch of queued URLs, before acknowledging it. SEXTANT_LONG=1 adds a run
// per sender kill point alone and one killing the receiver after its first
// seen-only batch.
func TestElasticKillDuringHandoff(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	runs := []struct {
		name           string
		crash0, crash2 string // kill points of node-0 (old owner) and node-2 (new owner)
	}{
		{"sender", "staged,spooled,chunk", ""},
		{"receiver", "", "queued"},
	}
	if os.Getenv("SEXTANT_LONG") != "" {
		runs = append(runs, []struct{ name, crash0, crash2 string }{
			{"staged", "staged", ""}, {"spooled", "spooled", ""}, {"chunk", "chunk", ""}, {"receiver-seen", "", "seen"},
		}...)
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) { elasticKill(t, r.crash0, r.crash2) })
	}
}

func elasticKill(t *testing.T, crash0, crash2 string) {
	web, srv, oracle := smallWeb(t, killBodyCap)
	root := t.TempDir()
	ids := []string{"node-0", "node-1", "node-2"}
	if err := tlsutil.WriteCluster(filepath.Join(root, "pki"), ids, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	addrs := freeAddrs(t, len(ids)) // for the children
	crash := []string{crash0, "", crash2}
	start := func(i int, joining bool) *killtest.Child {
		join := "0"
		if joining {
			join = "1"
		}
		return killtest.Start(t, killtest.Options{Run: "TestElasticKillChild", Env: []string{ekRootEnv + "=" + root,
			ekIndexEnv + "=" + strconv.Itoa(i), ekAddrsEnv + "=" + strings.Join(addrs, ","), ekMembersEnv + "=2",
			ekJoinEnv + "=" + join, ekWebEnv + "=" + srv.Addr(), ekCrashEnv + "=" + crash[i], caEnv(srv)}})
	}
	kids := []*killtest.Child{start(0, false), start(1, false), nil}
	members := make([]hostsplit.Member, len(ids))
	for i := range ids {
		members[i] = hostsplit.Member{ID: hostsplit.NodeID(ids[i]), Addr: addrs[i]}
	}
	tn, err := LoopbackOperator(filepath.Join(root, "pki")) // membership changes need an operator
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Let the two nodes crawl 500 pages (node-0 then has hundreds of
	// queued URLs of hosts that move: many hand-off chunks, so every kill
	// point is reached), then add node-2.
	waitCrawlLogs(t, ctx, root, ids[:2], 500)
	kids[2] = start(2, true)
	stopSupervisor := superviseKills(t, root, ids, kids, start)
	rep, err := ChangeMembership(ctx, ChangeOptions{TLS: tn, Old: hostsplit.View{Epoch: 1, Members: members[:2]},
		New: hostsplit.View{Epoch: 2, Members: members}, Logger: logging.Test(t)})
	kills := stopSupervisor()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, c := range crash {
		for _, step := range strings.Split(c, ",") {
			if step != "" {
				want = append(want, fmt.Sprintf("%s at %s", ids[i], step))
			}
		}
	}
	if !slices.Equal(kills, want) {
		t.Errorf("kills %q, want %q", kills, want)
	}
	t.Logf("join with kills %q: %d hosts, %d queued + %d fetched URLs handed over; total %v", kills,
		rep.HandoffHosts, rep.HandoffQueued, rep.HandoffSeen, rep.Total)
	deadline := time.Now().Add(3 * time.Minute)
	for i, k := range kids {
		if err := k.Wait(time.Until(deadline)); err != nil {
			t.Errorf("node-%d: %v\n%.3000s", i, err, k.Output())
		}
	}
	checkElasticKillLogs(t, web, srv, oracle, root, ids, members)
}

// waitCrawlLogs waits until the crawl logs of ids under root have n lines
// in all.
func waitCrawlLogs(t *testing.T, ctx context.Context, root string, ids []string, n int) {
	for {
		got := 0
		for _, id := range ids {
			b, _ := os.ReadFile(filepath.Join(root, id, "crawl.log"))
			got += strings.Count(string(b), "\n")
		}
		if got >= n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no progress: %d crawl-log lines", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// superviseKills starts the supervisor: it SIGKILLs a child that asks for
// it (it is blocked at its kill point) and restarts it on its data dir,
// replacing it in kids. The returned stop ends the supervisor and returns
// the kills ("node-i at STEP").
func superviseKills(t *testing.T, root string, ids []string, kids []*killtest.Child, start func(int, bool) *killtest.Child) (stop func() []string) {
	var kills []string
	stopc := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stopc:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for i, id := range ids {
				f := filepath.Join(root, id+ekKillMe)
				step, err := os.ReadFile(f)
				if err != nil {
					continue
				}
				os.Remove(f)
				k := kids[i]
				if !k.Kill() { // SIGKILL
					t.Errorf("kill %s: it had exited (%v)", id, k.Err())
				}
				kills = append(kills, fmt.Sprintf("%s at %s", id, step))
				t.Logf("%s killed at hand-off step %q (%v); restarting it\n%.1500s", id, step, k.Err(), k.Output())
				time.Sleep(300 * time.Millisecond)
				kids[i] = start(i, i == 2)
			}
		}
	}()
	return func() []string {
		close(stopc)
		wg.Wait()
		return kills
	}
}

// checkElasticKillLogs: every crawl-log line was fetched by the owner of
// its host under the view of its epoch, restarts included; the fetched
// set is the oracle's, with repeats bounded by the pause.
func checkElasticKillLogs(t *testing.T, web *simweb.Web, srv *simweb.Server, oracle *simweb.OracleResult, root string, ids []string, members []hostsplit.Member) {
	var es []LogEntry
	for _, id := range ids {
		e, err := ReadLogFile(filepath.Join(root, id, "crawl.log"))
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e...)
	}
	foreign, err := ForeignFetches(es, hostsplit.View{Epoch: 1, Members: members[:2]}, hostsplit.View{Epoch: 2, Members: members})
	if err != nil {
		t.Error(err)
	}
	for _, e := range foreign[:min(10, len(foreign))] {
		t.Errorf("%s fetched %s under epoch %d without owning its host", e.Node, e.URL, e.Epoch)
	}
	fetched, extra, dups := serverFetched(web, srv)
	var rest []string
	for _, u := range fetched {
		trap := false
		for _, h := range oracle.TrapHosts {
			if strings.HasPrefix(u, "http://"+h+"/") {
				trap = true
			}
		}
		if !trap {
			rest = append(rest, u)
		}
	}
	if err := oracle.Check(rest); err != nil {
		t.Errorf("the fetched set (trap hosts aside) differs from the oracle's: %v", err)
	}
	// The pause cancels at most one fetch per worker of the two crawling
	// nodes; those are fetched again after RESUME.
	if extra > 2*ekWorkers {
		t.Errorf("%d repeated fetches, want ≤ %d (fetches cancelled by the pause): %v", extra, 2*ekWorkers, dups[:min(10, len(dups))])
	}
	t.Logf("%d URLs fetched (oracle %d + traps), %d repeated", len(fetched), oracle.Size(), extra)
}
