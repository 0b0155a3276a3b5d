package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/simweb"
)

// crawl --ca-file trusts a CA besides the system roots: a crawl of an
// HTTPS simweb (reached by --resolve, as a user would) equals the oracle
// with simweb's CA, fails its HTTPS hosts visibly (robots.txt unreachable
// in crawl.log, no https URL fetched) without it, and a bad file is a
// usage error (exit 2) naming the flag.
func TestCrawlCAFile(t *testing.T) {
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{BodyCap: 1 << 20, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ca := writeSimwebCA(t, srv, tmp)
	write := func(name, content string, seeds ...string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(content+strings.Join(seeds, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var httpsSeed string
	for _, s := range web.Seeds() {
		if strings.HasPrefix(s, "https://") {
			httpsSeed = s
		}
	}
	if httpsSeed == "" {
		t.Fatalf("no HTTPS seed among %v", web.Seeds())
	}
	args := func(data, seeds string, extra ...string) []string {
		return append([]string{"crawl", "--seeds", seeds, "--data", filepath.Join(tmp, data),
			"--resolve", web.Domain() + "=" + srv.Addr(), "--allow-private",
			"--scope", "suffixes", "--suffix", web.Domain(), "--workers", "16", "--body-cap", "1048576",
			"--min-delay", "0", "--max-delay", "50ms", "--failure-backoff", "10ms", "--max-failure-backoff", "100ms",
			"--due-flush", "50ms", "--progress", "0", "--cache-advice=false"}, extra...)
	}
	all := write("seeds.txt", "", web.Seeds()...)

	for name, file := range map[string]string{
		"missing": filepath.Join(tmp, "nope.pem"),
		"empty":   write("empty.pem", ""),
		"not PEM": write("junk.pem", "this is not a certificate\n"),
	} {
		code, _, errOut := runCLI(t, args("bad", all, "--ca-file", file)...)
		if code != 2 || !strings.Contains(errOut, "--ca-file") {
			t.Errorf("%s --ca-file: exit %d, %q; want 2 naming the flag", name, code, errOut)
		}
	}

	// The run without the CA waits out one host's robots.txt retries
	// (≈ 15 s, the fetcher's): both runs go at once.
	type result struct {
		code     int
		out, err string
	}
	without := make(chan result)
	go func() {
		code, out, errOut := runCLI(t, args("without", write("https-seed.txt", "", httpsSeed))...)
		without <- result{code, out, errOut}
	}()
	code, out, errOut := runCLI(t, args("with", all, "--ca-file", ca)...)
	if code != 0 {
		t.Errorf("with --ca-file: exit %d: %s %s", code, out, errOut)
	}
	es, err := crawl.ReadLogFile(filepath.Join(tmp, "with", "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	crawl.CountFetches(es, count)
	for u := range count {
		if !onWeb(web, u) { // nohost.sim.test: --resolve sends it to simweb, DNS would not
			delete(count, u)
		}
	}
	if n, twice, diff := crawl.CheckFetched(count, oracle.Check); diff != "" || twice != 0 {
		t.Errorf("with --ca-file: %d URLs, %d twice: %s", n, twice, diff)
	}

	// Without it, only the HTTPS seed.
	r := <-without
	es, err = crawl.ReadLogFile(filepath.Join(tmp, "without", "crawl.log"))
	if err != nil {
		t.Fatalf("without --ca-file: exit %d %s %s: %v", r.code, r.out, r.err, err)
	}
	unreachable := false
	for _, e := range es {
		if e.Outcome != crawl.OutcomeRobots && strings.HasPrefix(e.URL, "https://") {
			t.Errorf("fetched %s without trusting simweb's CA", e.URL)
		}
		unreachable = unreachable || (e.URL == httpsSeed && strings.Contains(e.Note, "unreachable"))
	}
	if !unreachable {
		t.Errorf("without --ca-file the seed %s is not logged robots.txt unreachable: %+v", httpsSeed, es)
	}
}
