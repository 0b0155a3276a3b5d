package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/simweb"
)

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// fetchLines is the number of fetch lines (robots lines left out) of
// DIR/crawl.log.
func fetchLines(t *testing.T, dir string) int {
	t.Helper()
	es, err := crawl.ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Outcome != crawl.OutcomeRobots {
			n++
		}
	}
	return n
}

// readReport reads a JSON report written by --report-json.
func readReport(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// checkReport checks a JSON report of one node against that node's crawl
// log entries: the same outcome counts, and every field the report
// promises.
func checkReport(t *testing.T, rep map[string]any, kind string, log []crawl.LogEntry) {
	t.Helper()
	if rep["kind"] != kind {
		t.Errorf("report kind %v, want %s", rep["kind"], kind)
	}
	for _, k := range []string{"fetches", "pages_per_second", "bytes_per_second", "front_cache_hit_rate",
		"due_disk_bytes_per_url", "wire_bytes_per_cross_url", "cross_machine_traffic_reduction", "per_node"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
	byOutcome := map[string]float64{}
	for _, e := range log {
		byOutcome[e.Outcome]++
	}
	for k, oc := range map[string]string{"fetch_ok": crawl.OutcomeOK, "redirects": crawl.OutcomeRedirect,
		"http_errors": crawl.OutcomeHTTPErr, "fetch_errors": crawl.OutcomeError} {
		if got, _ := rep[k].(float64); got != byOutcome[oc] {
			t.Errorf("report %s = %v, crawl.log has %v %q lines", k, got, byOutcome[oc], oc)
		}
	}
	// A fetch cut short by the stop is neither logged nor counted as a
	// fetch: it is counted as requeued.
	logged := len(log) - int(byOutcome[crawl.OutcomeRobots])
	if f, _ := rep["fetches"].(float64); int(f) != logged || f == 0 {
		t.Errorf("report fetches %v, crawl.log has %d fetch lines", f, logged)
	}
	if _, ok := rep["fetches_requeued"].(float64); !ok {
		t.Errorf("JSON report lacks fetches_requeued")
	}
	if v, _ := rep["due_disk_bytes_per_url"].(float64); v <= 0 {
		t.Errorf("DUE bytes per URL %v", v)
	}
	nodes, _ := rep["per_node"].([]any)
	if len(nodes) != 1 {
		t.Fatalf("per_node: %v", rep["per_node"])
	}
	if a, ok := nodes[0].(map[string]any)["front_cache_advice"].(map[string]any); !ok || a["kneeK"].(float64) < 1 {
		t.Errorf("no front cache advice: %v", nodes[0])
	}
}

// A limited crawl of the embedded simweb stops at the limit and ends with
// its report (text and JSON, agreeing with crawl.log, with cache advice),
// and a second run on the same data dir (the estimator off) resumes: it
// fetches more, not the seeds again.
func TestCrawlSimwebLimitAndResume(t *testing.T) {
	dir := t.TempDir()
	repPath := filepath.Join(t.TempDir(), "report.json")
	args := []string{"crawl", "--simweb", "small", "--data", dir, "--workers", "8", "--max-fetches", "60", "--progress", "0"}
	code, out, errOut := runCLI(t, append(args, "--report-json", repPath)...)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "--max-fetches reached") || !strings.Contains(out, "fetches ") {
		t.Fatalf("no limit summary in %q", out)
	}
	for _, want := range []string{"Sextant crawl report: node n0", "pages/s", "disk bytes per URL",
		"cache advice    n0 front (DUE lookups): now 512/worker", "cross-machine   none (one node)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	es, err := crawl.ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	rep := readReport(t, repPath)
	checkReport(t, rep, "crawl", es)
	if !strings.Contains(out, "oracle check    not checked (stopped early)") || rep["oracle_check"] != "not checked (stopped early)" || rep["oracle_match"] != nil {
		t.Errorf("a crawl stopped by --max-fetches must not check the oracle: JSON oracle_check %v, oracle_match %v\n%s", rep["oracle_check"], rep["oracle_match"], out)
	}
	first := countLines(t, filepath.Join(dir, "crawl.log"))
	if f := fetchLines(t, dir); f != 60 {
		t.Fatalf("crawl log has %d fetch lines after --max-fetches 60, want exactly 60", f)
	}
	code, out, errOut = runCLI(t, append(args, "--cache-advice=false")...)
	if !strings.Contains(out, "cache advice    none") {
		t.Errorf("--cache-advice=false: %q", out)
	}
	if code != 0 {
		t.Fatalf("resume: exit %d: %s %s", code, out, errOut)
	}
	second := countLines(t, filepath.Join(dir, "crawl.log"))
	if f := fetchLines(t, dir); second < first+60 || f != 120 {
		t.Fatalf("resume added %d log lines, %d fetch lines in all; want ≥ 60 and exactly 120", second-first, f)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "crawl.log"))
	seed := simweb.SmallConfig()
	web, err := simweb.New(seed)
	if err != nil {
		t.Fatal(err)
	}
	home := web.Seeds()[0]
	if c := strings.Count(string(b), " "+home+" "); c != 1 {
		t.Errorf("seed %s logged %d times over two runs, want 1", home, c)
	}
}

// --seeds with --resolve reaches a separately started simweb, and only with
// --allow-private.
func TestCrawlSeedsResolve(t *testing.T) {
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tmp := t.TempDir()
	seeds := filepath.Join(tmp, "seeds.txt")
	if err := os.WriteFile(seeds, []byte("# seeds\n"+strings.Join(web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "data")
	base := []string{"crawl", "--seeds", seeds, "--data", dir, "--resolve", web.Domain() + "=" + srv.Addr(), "--ca-file", writeSimwebCA(t, srv, tmp),
		"--min-delay", "0", "--scope", "suffixes", "--suffix", web.Domain(), "--workers", "8", "--max-fetches", "30", "--progress", "0"}
	if code, _, errOut := runCLI(t, base...); code != 2 || !strings.Contains(errOut, "--allow-private") {
		t.Fatalf("without --allow-private: exit %d, %q; want 2 and a hint", code, errOut)
	}
	code, out, errOut := runCLI(t, append(base, "--allow-private")...)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "ok ") || strings.Contains(out, "ok 0,") {
		t.Fatalf("nothing fetched: %q", out)
	}
}

func TestCrawlBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"crawl", "--data", dir},                     // no seeds
		{"crawl", "--simweb", "huge", "--data", dir}, // bad preset
		{"crawl", "--simweb", "small"},               // no data
		{"crawl", "--simweb", "small", "--data", dir, "--scope", "planet"},
		{"crawl", "--simweb", "small", "--data", dir, "--cache-algo", "fifo"},
		{"crawl", "--simweb", "small", "--data", dir, "--resolve", "sim.test=localhost:1", "--allow-private"},
	} {
		if code, _, errOut := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errOut)
		}
	}
}
