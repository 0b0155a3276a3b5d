package main

import (
	"context"
	"encoding/csv"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/extsort"
)

func TestLinearFitAndDecileRates(t *testing.T) {
	slope, mean, ok := linearFit([]float64{0, 1, 2, 3}, []float64{10, 12, 14, 16})
	if !ok || slope != 2 || mean != 13 {
		t.Errorf("fit: slope %v mean %v ok %v", slope, mean, ok)
	}
	if _, _, ok := linearFit([]float64{1, 1, 1}, []float64{1, 2, 3}); ok {
		t.Errorf("a vertical fit must not be ok")
	}
	// 100 pages/s for 10 s, then 50 pages/s for 20 s (1,000 + 1,000 pages).
	var ss []sample
	for s := 1.0; s <= 30; s++ {
		f := 100 * math.Min(s, 10)
		if s > 10 {
			f += 50 * (s - 10)
		}
		ss = append(ss, sample{Elapsed: s, Fetched: f})
	}
	first, last, ok := decileRates(ss, 2000, 30)
	if !ok || math.Abs(first-100) > 1e-9 || math.Abs(last-50) > 1e-9 {
		t.Errorf("decile rates %v %v %v, want 100 and 50", first, last, ok)
	}
	if _, _, ok := decileRates(ss[:2], 2000, 30); ok {
		t.Errorf("two samples cannot give rates")
	}
}

func TestCompareCountsMissingExtraTwice(t *testing.T) {
	dir := t.TempDir()
	want := filepath.Join(dir, "want")
	if err := extsort.WriteFile(want, []string{"a", "b", "c", "e"}); err != nil {
		t.Fatal(err)
	}
	s, err := extsort.NewSorter(dir, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, u := range []string{"e", "b", "d", "b", "a", "f"} {
		s.Add(u)
	}
	got, err := s.Sorted()
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	w, err := extsort.Merge(want)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var c checkResult
	compare(w, got, &c)
	if c.OracleURLs != 4 || c.Distinct != 5 || c.Missing != 1 || c.Extra != 2 || c.Twice != 1 || c.Equal() {
		t.Errorf("%+v", c)
	}
}

// The whole harness on a tiny scale web: builds the crawler, serves the
// web from its own process, crawls it to the end while sampling, streams
// the oracle and finds the fetched set equal; writes the CSV, the plots,
// the report and its BENCHMARKS.md section.
func TestHarnessTinyWeb(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the crawler and crawls; skipped with -short")
	}
	out := t.TempDir()
	md := filepath.Join(out, "BENCHMARKS.md")
	if err := os.WriteFile(md, []byte("# B\n\n<!-- hand-written: begin (kept verbatim by make bench) -->\nX\n<!-- hand-written: end -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := options{out: out, root: "../../..", hosts: 25, workers: 8, every: 50 * time.Millisecond, benchMD: md}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := run(ctx, o, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	if !res.check.Equal() || res.check.OracleURLs < 500 {
		t.Errorf("check %+v", res.check)
	}
	f, err := os.Open(filepath.Join(out, "samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 3 || len(rows[0]) != len(csvHeader) {
		t.Fatalf("samples.csv: %d rows (%v)", len(rows), err)
	}
	for _, p := range plotFiles {
		for _, ext := range []string{".svg", ".png"} {
			if fi, err := os.Stat(filepath.Join(out, p+ext)); err != nil || fi.Size() == 0 {
				t.Errorf("plot %s%s: %v", p, ext, err)
			}
		}
	}
	b, _ := os.ReadFile(md)
	for _, want := range []string{scaleBegin, "fetched set = the oracle's (streamed sorted) | " + res.check.summary(), "| met |", scaleEnd, "\nX\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("BENCHMARKS.md lacks %q:\n%s", want, b)
		}
	}
	if res.peakRSS <= 0 || res.final.Heap <= 0 || res.final.SeenURLs <= 0 || res.final.DUEDisk <= 0 {
		t.Errorf("figures not sampled: peak RSS %v, last %+v", res.peakRSS, res.final)
	}
}

// -only oracle writes the streaming oracle; -only check then compares a
// crawl log with it (here a log that is missing).
func TestOnlySteps(t *testing.T) {
	out := t.TempDir()
	o := options{out: out, hosts: 8, only: "oracle"}
	if err := runOnly(o); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "oracle.txt"))
	if err != nil || !strings.HasPrefix(string(b), "http://h00000.sim.test/") {
		t.Fatalf("oracle.txt: %v %.80q", err, b)
	}
	o.only, o.oracle = "check", filepath.Join(out, "oracle.txt")
	if err := runOnly(o); err == nil {
		t.Errorf("check without a crawl log: no error")
	}
	samples := []sample{{Elapsed: 1, Fetched: 10, RSS: 5e7}, {Elapsed: 2, Fetched: 30, RSS: 6e7}, {Elapsed: 3, Fetched: 40, RSS: 6e7}}
	if err := writeCSV(filepath.Join(out, "samples.csv"), samples); err != nil {
		t.Fatal(err)
	}
	back, err := readCSV(filepath.Join(out, "samples.csv"))
	if err != nil || len(back) != 3 || back[1].Fetched != 30 || back[2].RSS != 6e7 {
		t.Fatalf("samples.csv read back: %v %+v", err, back)
	}
	o.only, o.figs = "report", filepath.Join(out, "figs")
	if err := runOnly(o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(o.figs, "scale-rate.svg")); err != nil {
		t.Errorf("report: no plot: %v", err)
	}
	o.only = "nonsense"
	if err := runOnly(o); err == nil {
		t.Errorf("-only nonsense: no error")
	}
}
