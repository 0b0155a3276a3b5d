package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/promtext"
)

// sample is one row of samples.csv.
type sample struct {
	Elapsed      float64 // s since the crawl started
	Fetched      float64 // fetches so far (sextant_fetches_total)
	PagesPerS    float64 // since the previous sample
	RSS          float64 // bytes (VmRSS)
	PeakRSS      float64 // bytes (VmHWM so far)
	Heap         float64 // Go heap in use, bytes (go_memstats_heap_alloc_bytes)
	HeapSys      float64 // Go heap obtained from the OS, bytes
	Queued       float64 // URLs in the frontier
	SeenURLs     float64 // URL fingerprints in the DUE's disk set
	FrontierDisk float64 // bytes under data/frontier
	DUEDisk      float64 // bytes under data/due
	LogDisk      float64 // bytes of data/crawl.log
	CPU          float64 // crawler CPU s so far
	SimwebCPU    float64 // simweb CPU s so far
}

// RSSPerURL and DiskPerURL are the bytes per URL known to the crawl (the
// DUE's set: fetched or queued).
func (s sample) RSSPerURL() float64  { return ratio(s.RSS, s.SeenURLs) }
func (s sample) DiskPerURL() float64 { return ratio(s.FrontierDisk+s.DUEDisk, s.SeenURLs) }

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

var csvHeader = []string{"elapsed_s", "pages_fetched", "pages_per_s", "crawler_rss_bytes", "crawler_peak_rss_bytes",
	"go_heap_alloc_bytes", "go_heap_sys_bytes", "frontier_urls", "due_urls", "frontier_disk_bytes", "due_disk_bytes",
	"crawl_log_bytes", "rss_bytes_per_url", "disk_bytes_per_url", "crawler_cpu_s", "simweb_cpu_s"}

func (s sample) row() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	r := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	return []string{r(s.Elapsed), f(s.Fetched), r(s.PagesPerS), f(s.RSS), f(s.PeakRSS), f(s.Heap), f(s.HeapSys),
		f(s.Queued), f(s.SeenURLs), f(s.FrontierDisk), f(s.DUEDisk), f(s.LogDisk), r(s.RSSPerURL()), r(s.DiskPerURL()),
		r(s.CPU), r(s.SimwebCPU)}
}

// writeCSV writes the samples (rewritten whole: it is also the progress
// file a watcher reads during the run).
func writeCSV(path string, samples []sample) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(csvHeader)
	for _, s := range samples {
		_ = w.Write(s.row())
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// sampleUntilDone samples the crawl every o.every until it exits (ctx
// done: the crawl is interrupted, gracefully) and returns the samples and
// how the crawl exited, and the crawl's wall time (from this call to its exit).
func sampleUntilDone(ctx context.Context, o options, c *crawlProc, w *webProc, log *slog.Logger) ([]sample, float64, error) {
	start := time.Now()
	samples, err := sampleLoop(ctx, o, c, w, log, start)
	return samples, time.Since(start).Seconds(), err
}

func sampleLoop(ctx context.Context, o options, c *crawlProc, w *webProc, log *slog.Logger, start time.Time) ([]sample, error) {
	waitc := make(chan error, 1)
	go func() { <-c.exit; waitc <- c.cmd.Wait() }()
	client := &http.Client{Timeout: 10 * time.Second}
	var samples []sample
	t := time.NewTicker(o.every)
	defer t.Stop()
	lastCSV := time.Now()
	interrupted := false
	for {
		select {
		case err := <-waitc:
			if err != nil {
				return samples, fmt.Errorf("crawler crawl: %w (see %s)", err, filepath.Join(o.out, "crawl.out"))
			}
			if interrupted {
				return samples, ctx.Err()
			}
			return samples, nil
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				_ = c.cmd.Process.Signal(os.Interrupt)
			}
			continue
		case <-t.C:
		}
		s, ok := takeSample(client, c, w)
		if !ok {
			continue // the crawl is ending
		}
		s.Elapsed = time.Since(start).Seconds()
		if n := len(samples); n > 0 {
			p := samples[n-1]
			s.PagesPerS = ratio(s.Fetched-p.Fetched, s.Elapsed-p.Elapsed)
		} else {
			s.PagesPerS = ratio(s.Fetched, s.Elapsed)
		}
		samples = append(samples, s)
		if time.Since(lastCSV) >= 30*time.Second {
			lastCSV = time.Now()
			if err := writeCSV(filepath.Join(o.out, "samples.csv"), samples); err != nil {
				log.Warn("samples.csv", "err", err)
			}
			log.Info("sample", "elapsed", time.Duration(s.Elapsed)*time.Second, "fetched", s.Fetched, "pages_per_s", int(s.PagesPerS),
				"rss_mb", int(s.RSS/1e6), "heap_mb", int(s.Heap/1e6), "queued", s.Queued)
		}
	}
}

// takeSample reads the crawl's /metrics, /proc and its data directory;
// false if /metrics does not answer (the crawl is ending).
func takeSample(client *http.Client, c *crawlProc, w *webProc) (sample, bool) {
	resp, err := client.Get(c.metrics)
	if err != nil {
		return sample{}, false
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return sample{}, false
	}
	m := string(b)
	s := sample{Fetched: promtext.Sum(m, "sextant_fetches_total"), Heap: promtext.Sum(m, "go_memstats_heap_alloc_bytes"),
		HeapSys: promtext.Sum(m, "go_memstats_heap_sys_bytes"), Queued: promtext.Sum(m, "sextant_frontier_urls"),
		SeenURLs: promtext.Sum(m, "sextant_due_entries")}
	pid := c.cmd.Process.Pid
	s.RSS, s.PeakRSS = procMem(pid)
	s.CPU, s.SimwebCPU = procCPU(pid), w.cpu()
	s.FrontierDisk = dirBytes(filepath.Join(c.data, "frontier"))
	s.DUEDisk = dirBytes(filepath.Join(c.data, "due"))
	if fi, err := os.Stat(filepath.Join(c.data, "crawl.log")); err == nil {
		s.LogDisk = float64(fi.Size())
	}
	return s, true
}

// readCSV reads samples.csv back (a run's, possibly one still going).
func readCSV(path string) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		return nil, fmt.Errorf("%s: not a samples.csv of this version", path)
	}
	var out []sample
	for _, r := range rows[1:] {
		v := make([]float64, len(r))
		for i, c := range r {
			if v[i], err = strconv.ParseFloat(c, 64); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		out = append(out, sample{Elapsed: v[0], Fetched: v[1], PagesPerS: v[2], RSS: v[3], PeakRSS: v[4], Heap: v[5],
			HeapSys: v[6], Queued: v[7], SeenURLs: v[8], FrontierDisk: v[9], DUEDisk: v[10], LogDisk: v[11],
			CPU: v[14], SimwebCPU: v[15]})
	}
	return out, nil
}
