package crawl

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/killtest"
	"github.com/sextant-crawler/sextant/simweb"
)

// Environment of the child node run by TestKillNineResumes.
const (
	killChildEnv   = "SEXTANT_KILLTEST_CHILD" // data dir
	killAddrEnv    = "SEXTANT_KILLTEST_ADDR"  // simweb listener
	killWARCEnv    = "SEXTANT_KILLTEST_WARC"  // WARC dir, if any (warckill_test.go)
	killWorkers    = 8
	killBodyCap    = 1 << 20
	killChildLimit = 3 * time.Minute
)

// TestKillChildNode is the child: it crawls simweb at $SEXTANT_KILLTEST_ADDR
// from $SEXTANT_KILLTEST_CHILD until idle. It does nothing in a normal run.
func TestKillChildNode(t *testing.T) {
	dir := os.Getenv(killChildEnv)
	if dir == "" {
		t.Skip("child of TestKillNineResumes only")
	}
	addr := os.Getenv(killAddrEnv)
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	lf, err := NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{web.Domain()}, MaxRepeatedSegments: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Open(Options{
		DataDir: dir, Workers: killWorkers,
		Fetcher: fetcher.Options{AllowPrivate: true, Resolve: map[string]string{web.Domain(): addr}, TLSConfig: childTLS(t),
			FetchTimeout: 3 * time.Second, BodyCap: killBodyCap},
		Frontier: frontier.Options{MinDelay: 0, Factor: 2, MaxDelay: 50 * time.Millisecond, FailureBackoff: 10 * time.Millisecond, MaxFailureBackoff: 100 * time.Millisecond,
			// A Done lost in a kill re-fetches a finished URL; syncing it
			// bounds repeats to the leases in flight.
			SyncDone: true},
		DUEFlushInterval: 50 * time.Millisecond,
		MaxPagesPerHost:  1000,
		Filter:           lf,
		WARCArchive:      WARCArchive{Dir: os.Getenv(killWARCEnv), MaxSize: 256 << 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), killChildLimit)
	defer cancel()
	if err := n.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("child crawl did not finish")
	}
}

// Issue 5: kill -9 a node at random moments, restart it on the same data
// dir each time, finally let it finish: the server saw exactly the
// oracle's set, and duplicates are bounded by the URLs in flight at the
// kills (≤ workers per kill).
func TestKillNineResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	trials := 3
	if os.Getenv("SEXTANT_LONG") != "" {
		trials = 6
	}
	web, srv, oracle := smallWeb(t, killBodyCap)
	dir := t.TempDir()
	child := func() *killtest.Child {
		return killtest.Start(t, killtest.Options{Run: "TestKillChildNode",
			Env: []string{killChildEnv + "=" + dir, killAddrEnv + "=" + srv.Addr(), caEnv(srv)}})
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("kill schedule seed %d", seed)
	kills := 0
	for i := 0; i < trials; i++ {
		before := srv.Requests().Requests
		c := child()
		delay := time.Duration(300+rng.IntN(3000)) * time.Millisecond
		select {
		case <-c.Done():
			t.Logf("trial %d: child finished before its kill at %v (err %v)", i, delay, c.Err())
			if c.Err() != nil {
				t.Fatalf("child failed: %v\n%s", c.Err(), c.Output())
			}
			continue
		case <-time.After(delay):
		}
		if !c.Kill() && c.Err() != nil {
			t.Fatalf("child failed before its kill: %v\n%s", c.Err(), c.Output())
		}
		kills++
		t.Logf("trial %d: SIGKILL after %v, %d requests in this run", i, delay, srv.Requests().Requests-before)
	}
	final := child()
	if err := final.Wait(5 * time.Minute); err != nil {
		t.Fatalf("final run: %v\n%s", err, final.Output())
	}

	// What the server saw, robots.txt (and its redirect hops) excluded;
	// --resolve sends every *.sim.test name to the server, which answers 421
	// for names the web lacks (DialContext, what the oracle assumes, would
	// fail to connect instead), so only the web's hosts count.
	fetched, extra, dups := serverFetched(web, srv)
	// Exact, trap hosts included: the per-host budget is persisted with the
	// frontier, so a trap host gets at most one budget over all the runs
	// (Check fails on any trap host over oracle.Rules.MaxPagesPerHost).
	if err := oracle.Check(fetched); err != nil {
		t.Errorf("after %d kills the fetched set differs from the oracle's: %v", kills, err)
	}
	perTrap := map[string]int{}
	for _, u := range fetched {
		for _, h := range oracle.TrapHosts {
			if strings.HasPrefix(u, "http://"+h+"/") {
				perTrap[h]++
			}
		}
	}
	t.Logf("trap hosts: URLs fetched %v (budget %d URLs admitted per host)", perTrap, oracle.Rules.MaxPagesPerHost)
	if extra > killWorkers*kills {
		t.Errorf("%d repeated fetches after %d kills, want ≤ %d (workers per kill): %v", extra, kills, killWorkers*kills, dups[:min(10, len(dups))])
	}
	t.Logf("%d kills, %d URLs fetched (oracle %d + traps), %d repeated fetches", kills, len(fetched), oracle.Size(), extra)
}
