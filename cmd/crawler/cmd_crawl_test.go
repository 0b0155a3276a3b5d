package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// A limited crawl of the embedded simweb stops at the limit, and a second
// run on the same data dir resumes: it fetches more, not the seeds again.
func TestCrawlSimwebLimitAndResume(t *testing.T) {
	dir := t.TempDir()
	args := []string{"crawl", "--simweb", "small", "--data", dir, "--workers", "8", "--max-fetches", "60", "--progress", "0"}
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "--max-fetches reached") || !strings.Contains(out, "fetches ") {
		t.Fatalf("no limit summary in %q", out)
	}
	first := countLines(t, filepath.Join(dir, "crawl.log"))
	if first < 60 {
		t.Fatalf("crawl log has %d lines after --max-fetches 60", first)
	}
	code, out, errOut = runCLI(t, args...)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s %s", code, out, errOut)
	}
	second := countLines(t, filepath.Join(dir, "crawl.log"))
	if second < first+60 {
		t.Fatalf("resume added %d log lines, want ≥ 60", second-first)
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
	base := []string{"crawl", "--seeds", seeds, "--data", dir, "--resolve", web.Domain() + "=" + srv.Addr(),
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
