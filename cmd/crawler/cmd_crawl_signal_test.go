package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/simweb"
)

// sigChildEnv carries the child's command line (arguments separated by
// \x1f) to TestCrawlSignalChild.
const sigChildEnv = "SEXTANT_SIGTEST_ARGS"

// TestCrawlSignalChild is the child of TestCrawlSigintResumes: it runs the
// real main() — signal handling included — with the arguments in
// $SEXTANT_SIGTEST_ARGS, and exits with its code. It does nothing in a
// normal run.
func TestCrawlSignalChild(t *testing.T) {
	args := os.Getenv(sigChildEnv)
	if args == "" {
		t.Skip("child of TestCrawlSigintResumes only")
	}
	os.Args = append([]string{"crawler"}, strings.Split(args, "\x1f")...)
	main() // exits
}

// Issue 5: SIGINT stops `crawler crawl` gracefully (exit 0, "interrupted",
// fetches in flight finish or are requeued, state durable) and running it
// again on the same --data resumes. After several interrupts at random
// moments and a final run to the end, the pages simweb served equal the
// oracle's set, the crawl log has every URL exactly once, and the server
// saw a URL twice only for fetches cut off in flight (≤ workers per
// interrupt).
func TestCrawlSigintResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const (
		workers    = 8
		interrupts = 3
		bodyCap    = 1 << 20
	)
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{BodyCap: bodyCap, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	seeds := filepath.Join(tmp, "seeds.txt")
	if err := os.WriteFile(seeds, []byte(strings.Join(web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "data")
	logPath := filepath.Join(dir, "crawl.log")
	args := []string{"crawl", "--seeds", seeds, "--data", dir, "--allow-private", "--ca-file", writeSimwebCA(t, srv, tmp),
		"--resolve", web.Domain() + "=" + srv.Addr(), "--scope", "suffixes", "--suffix", web.Domain(),
		"--max-repeated-segments", "-1", "--workers", strconv.Itoa(workers), "--body-cap", strconv.Itoa(bodyCap), "--fetch-timeout", "3s",
		"--min-delay", "0", "--factor", "2", "--max-delay", "50ms",
		"--failure-backoff", "10ms", "--max-failure-backoff", "100ms", "--due-flush", "50ms",
		"--max-pages-per-host", "1000", "--progress", "0"}
	child := func() (*exec.Cmd, *bytes.Buffer) {
		c := exec.Command(exe, "-test.run=^TestCrawlSignalChild$", "-test.count=1", "-test.timeout=5m")
		c.Env = append(os.Environ(), sigChildEnv+"="+strings.Join(args, "\x1f"))
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		return c, &out
	}
	logLines := func() int {
		b, _ := os.ReadFile(logPath)
		return bytes.Count(b, []byte("\n"))
	}

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 5))
	t.Logf("interrupt schedule seed %d", seed)
	stopped := 0
	for i := range interrupts {
		c, out := child()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- c.Wait() }()
		// Interrupt once this run has logged a random number of fetches:
		// the crawl is then surely under way (signal handler installed).
		at := logLines() + 20 + rng.IntN(400)
		finished := false
		for !finished && logLines() < at {
			select {
			case err := <-exited:
				finished = true
				if err != nil {
					t.Fatalf("run %d failed before its interrupt: %v\n%s", i, err, out)
				}
				t.Logf("run %d finished before its interrupt at %d log lines", i, at)
			case <-time.After(10 * time.Millisecond):
			}
		}
		if finished {
			break
		}
		if err := c.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("run %d: SIGINT: %v, want exit 0\n%s", i, err, out)
			}
		case <-time.After(2 * time.Minute):
			_ = c.Process.Kill()
			<-exited
			t.Fatalf("run %d: no exit 2 minutes after SIGINT\n%s", i, out)
		}
		if !strings.Contains(out.String(), "interrupted; run again with the same --data to resume") {
			t.Fatalf("run %d: no interrupted summary:\n%s", i, out)
		}
		stopped++
		t.Logf("run %d: SIGINT at %d crawl log lines, %d after the graceful stop", i, at, logLines())
	}
	c, out := child()
	if err := c.Run(); err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "done (frontier empty)") {
		t.Fatalf("final run did not end with an empty frontier:\n%s", out)
	}

	// The server's view (robots.txt and its redirect hops aside; --resolve
	// sends every *.sim.test name to simweb, which answers 421 for names
	// the web lacks, so only the web's hosts count).
	count := map[string]int{}
	for host, reqs := range srv.Log() {
		if _, ok := web.HostIndex(host); !ok {
			continue
		}
		for _, r := range reqs {
			if r.Path != "/robots.txt" && !strings.HasPrefix(r.Path, "/robots/") {
				scheme := "http://" // the server's log knows how it was asked
				if r.TLS {
					scheme = "https://"
				}
				count[scheme+host+r.Path]++
			}
		}
	}
	var served []string
	repeats := 0
	for u, n := range count {
		served = append(served, u)
		repeats += n - 1
	}
	if err := oracle.Check(served); err != nil {
		t.Errorf("after %d interrupts the served set differs from the oracle's: %v", stopped, err)
	}
	if repeats > workers*stopped {
		t.Errorf("%d repeated requests after %d interrupts, want ≤ %d (fetches in flight)", repeats, stopped, workers*stopped)
	}
	// The crawl log: every URL with a request sent, exactly once over all
	// the runs (a fetch cut off by the stop is requeued, not logged).
	es, err := crawl.ReadLogFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]int{}
	for _, e := range es {
		if e.Outcome != crawl.OutcomeRobots {
			logged[e.URL]++
		}
	}
	for u, n := range logged {
		if n > 1 {
			t.Errorf("%s logged %d times", u, n)
		}
	}
	for _, u := range served {
		if logged[u] == 0 {
			t.Errorf("%s served but not in the crawl log", u)
		}
	}
	t.Logf("%d interrupts, %d URLs served (oracle %d + traps %v), %d repeated requests, %d URLs logged",
		stopped, len(served), oracle.Size(), oracle.TrapHosts, repeats, len(logged))
}
