package crawl

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// fillDataDir opens a fresh node in o.DataDir and queues n synthetic URLs
// (1,000 hosts) through its DUE, as Repair does, then closes it.
func fillDataDir(tb testing.TB, o Options, n int) {
	tb.Helper()
	o.CrawlLog = NewCrawlLog(nopWriter{})
	nd, err := Open(o)
	if err != nil {
		tb.Fatal(err)
	}
	batch := make([]due.Entry, 0, 4096)
	for i := 0; i < n; i++ {
		u := fmt.Sprintf("http://h%d.example/page/%d", i%1000, i)
		batch = append(batch, due.Entry{FP: fingerprint.URL(u), URL: u})
		if len(batch) == cap(batch) || i == n-1 {
			if err := nd.due.AddBatch(batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := nd.due.Flush(); err != nil {
		tb.Fatal(err)
	}
	if got := nd.fr.Len(); got != n {
		tb.Fatalf("frontier holds %d URLs, want %d", got, n)
	}
	if err := nd.Close(); err != nil {
		tb.Fatal(err)
	}
}

func openCheckOptions(dir string) Options {
	o := Options{DataDir: dir, Workers: 1, MaxPagesPerHost: 1 << 30}
	o.Frontier.MemTableSize = 64 << 10 // sstables, not only a WAL
	return o
}

// Issue 23: Options.SkipOpenCheck skips the scan of every frontier key at
// Open, and only that: a frontier sstable with a scribbled data block is
// refused by a default Open, opened with SkipOpenCheck, and still found by
// Check (fsck).
func TestSkipOpenCheck(t *testing.T) {
	dir := t.TempDir()
	fillDataDir(t, openCheckOptions(dir), 20000)
	sst := pickFile(t, filepath.Join(dir, frontierDir), "*.sst", false)
	damage(t, sst, damScribble, rand.New(rand.NewPCG(1, 2)))

	_, err := Open(openCheckOptions(dir))
	if !errors.Is(err, ErrDamaged) {
		t.Fatalf("default Open of a frontier with a scribbled sstable: %v, want ErrDamaged", err)
	}
	o := openCheckOptions(dir)
	o.SkipOpenCheck = true
	n, err := Open(o)
	if err != nil {
		t.Fatalf("Open with SkipOpenCheck: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	rep, err := Check(openCheckOptions(dir))
	if err != nil || rep.OK() {
		t.Fatalf("Check after an Open that skipped the scan: %+v, %v", rep.Findings, err)
	}
	// The cheap cross-checks still run: a frontier that lost its applied
	// batches is refused with SkipOpenCheck too.
	dir2 := t.TempDir()
	fillDataDir(t, openCheckOptions(dir2), 2000)
	if err := os.RemoveAll(filepath.Join(dir2, frontierDir)); err != nil {
		t.Fatal(err)
	}
	o = openCheckOptions(dir2)
	o.SkipOpenCheck = true
	if _, err := Open(o); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Open with SkipOpenCheck of a directory without its frontier: %v, want ErrDamaged", err)
	}
}

// BenchmarkOpenCheck measures what Open's frontier scan costs: Open+Close
// of a node with SEXTANT_OPENCHECK_URLS queued URLs (default 10⁵) with the
// scan (check) and without (skip, the baseline). See
// docs/bench/open-check.md for the command and figures.
func BenchmarkOpenCheck(b *testing.B) {
	n := 100000
	if s := os.Getenv("SEXTANT_OPENCHECK_URLS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	t0 := time.Now()
	fillDataDir(b, openCheckOptions(dir), n)
	b.Logf("%d URLs queued in %v", n, time.Since(t0).Round(time.Millisecond))
	for _, skip := range []bool{false, true} {
		name := "check"
		if skip {
			name = "skip"
		}
		b.Run(fmt.Sprintf("%s/urls=%d", name, n), func(b *testing.B) {
			o := openCheckOptions(dir)
			o.SkipOpenCheck = skip
			for i := 0; i < b.N; i++ {
				nd, err := Open(o)
				if err != nil {
					b.Fatal(err)
				}
				if err := nd.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "urls/s")
		})
	}
}
