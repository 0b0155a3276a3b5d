package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCachesimGeneratedTrace(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.sxt")
	code, out, errs := runCLI(t, "cachesim", "--gen", "zipf", "--n", "30000", "--write-trace", trace)
	if code != 0 || !strings.Contains(out, "30000 requests") {
		t.Fatalf("generate: exit %d, %q %q", code, out, errs)
	}
	outDir := filepath.Join(dir, "out")
	code, out, errs = runCLI(t, "cachesim", "--trace", trace, "--kmax", "12", "--workers", "4", "--out", outDir)
	if code != 0 {
		t.Fatalf("simulate: exit %d, %q %q", code, out, errs)
	}
	for _, want := range []string{"trace: 30000 requests", "recommendation (4 workers", "clock ", "lru ", "per worker"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"results.csv", "missrate.png", "missrate.svg", "relmin.png", "relmin.svg"} {
		if st, err := os.Stat(filepath.Join(outDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	code, out, _ = runCLI(t, "cachesim", "--trace", trace, "--kmax", "12", "--sample", "0.25", "--no-plots", "--out", outDir)
	if code != 0 || !strings.Contains(out, "APPROXIMATE") {
		t.Fatalf("sampled: exit %d, %q", code, out)
	}
	csv, _ := os.ReadFile(filepath.Join(outDir, "results.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 1+6*13 {
		t.Errorf("results.csv has %d lines, want %d", lines, 1+6*13)
	}
}

func TestCachesimURLsAndBadInput(t *testing.T) {
	dir := t.TempDir()
	urls := filepath.Join(dir, "urls.txt")
	if err := os.WriteFile(urls, []byte("http://a.test/\nhttp://b.test/\nhttp://a.test/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "cachesim", "--urls", urls, "--kmax", "2", "--algos", "lru,min", "--no-plots", "--out", dir)
	if code != 0 || !strings.Contains(out, "trace: 3 requests") {
		t.Fatalf("urls: exit %d, %q %q", code, out, errs)
	}
	code, out, errs = runCLI(t, "cachesim", "--urls", urls, "--kmax", "2", "--algos", "clock,clock-exact,clock-exact-marked", "--no-plots", "--out", dir)
	csv, _ := os.ReadFile(filepath.Join(dir, "results.csv"))
	if code != 0 || !strings.Contains(string(csv), "\nclock-exact,2,3,2,") || !strings.Contains(string(csv), "\nclock-exact-marked,2,3,2,") {
		t.Fatalf("exact clocks: exit %d, %q %q, csv:\n%s", code, out, errs, csv)
	}
	for _, args := range [][]string{
		{"cachesim"},
		{"cachesim", "--gen", "zipf", "--urls", urls},
		{"cachesim", "--gen", "pareto"},
		{"cachesim", "--urls", urls, "--algos", "fifo"},
		{"cachesim", "--urls", urls, "--kmin", "5", "--kmax", "2"},
		{"cachesim", "--trace", urls, "--write-trace", "x"},
		{"cachesim", "--urls", urls, "--sample", "1.5"},
	} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	// A text file is not a trace: exit 1 with the offset.
	code, _, errs = runCLI(t, "cachesim", "--trace", urls, "--out", dir)
	if code != 1 || !strings.Contains(errs, "byte offset") {
		t.Errorf("bad trace: exit %d, %q", code, errs)
	}
}
