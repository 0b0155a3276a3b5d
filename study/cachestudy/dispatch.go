package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	sxfrontier "github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/simweb"
)

// Assignments of the dispatch study (issue 30): which of W per-worker
// caches sees a page's links.
const (
	AssignGlobal     = "global"      // one cache of k: no per-worker split
	AssignHostAffine = "host-affine" // the page's host's worker (sxfrontier.HostWorker): Mercator's binding
	AssignRoundRobin = "round-robin" // page i to worker i mod W: DispatchAny with equal fetch times
)

// DispatchTrace is an emulated crawl's link stream with, for every link,
// the worker of its page under host-affine and round-robin dispatch.
type DispatchTrace struct {
	FPs          []uint64
	Affine, RRob []uint16
	Stats        EmulateStats
	// PagesPerWorker is how many pages each worker fetched under
	// host-affine binding without steals: the load imbalance.
	PagesPerWorker []int
}

// EmulateDispatch crawls web offline (EmulateCrawl with o) and tags each
// link with its page's worker among w.
func EmulateDispatch(web *simweb.Web, o EmulateOptions, w int) (*DispatchTrace, error) {
	t := &DispatchTrace{PagesPerWorker: make([]int, w)}
	var aw, rw uint16
	page := 0
	o.OnPage = func(host string) {
		aw, rw = uint16(sxfrontier.HostWorker(host, w)), uint16(page%w)
		t.PagesPerWorker[aw]++
		page++
	}
	st, err := EmulateCrawl(web, o, func(fp uint64) {
		t.FPs = append(t.FPs, fp)
		t.Affine = append(t.Affine, aw)
		t.RRob = append(t.RRob, rw)
	})
	t.Stats = st
	return t, err
}

// DispatchStudy replays the trace through one global cache of k and W
// per-worker caches of k/W under both assignments, for every k and algo.
func DispatchStudy(ctx context.Context, t *DispatchTrace, algos []string, w int, ks []int) ([]PWResult, error) {
	var out []PWResult
	for _, a := range algos {
		for _, k := range ks {
			for _, as := range []string{AssignGlobal, AssignHostAffine, AssignRoundRobin} {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				r := PWResult{Algo: a, Workers: w, KTotal: k, KPer: k / w, Assignment: as}
				assign := t.Affine
				switch as {
				case AssignGlobal:
					r.Workers, r.KPer, assign = 1, k, nil
				case AssignRoundRobin:
					assign = t.RRob
				}
				m, err := ReplayPerWorker(a, t.FPs, assign, r.Workers, k)
				if err != nil {
					return nil, err
				}
				r.Requests, r.Misses = uint64(len(t.FPs)), m
				r.MissRate = float64(m) / float64(max(len(t.FPs), 1))
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func cmdDispatch(ctx context.Context, args []string) error {
	f := flag.NewFlagSet("dispatch", flag.ExitOnError)
	hosts := f.Int("hosts", 2000, "simweb hosts")
	pages := f.Int("pages", 100000, "simweb articles, spread over --hosts")
	order := f.String("order", OrderBFS, "crawl order: bfs, inlinks or random")
	polite := f.Int("polite", 256, "politeness gap in fetches (0: none)")
	maxPages := f.Int("max-pages", 0, "stop after this many fetches (0: all)")
	workers := f.Int("workers", 32, "workers W")
	ksS := f.String("ks", "4096,8192,16384,32768,65536,262144", "total cache sizes k")
	algosS := f.String("algos", "lru,clock", "cache algorithms")
	out := f.String("out", "", "output directory (dispatch.csv, emulate.json)")
	_ = f.Parse(args)
	if *out == "" || *workers < 1 || *workers > 1<<16 {
		return fmt.Errorf("dispatch: --out is required and --workers must be in [1, 65536]")
	}
	ks, err := ints(*ksS)
	if err != nil {
		return err
	}
	cfg := simweb.DefaultConfig()
	cfg.Hosts, cfg.PagesPerHost, cfg.NoPathologies = *hosts, float64(*pages)/float64(*hosts), true
	web, err := simweb.New(cfg)
	if err != nil {
		return err
	}
	t, err := EmulateDispatch(web, EmulateOptions{Order: *order, MaxPages: *maxPages, Seed: 1, Polite: *polite}, *workers)
	if err != nil {
		return err
	}
	res, err := DispatchStudy(ctx, t, strings.Split(*algosS, ","), *workers, ks)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := writePWCSV(filepath.Join(*out, "dispatch.csv"), res); err != nil {
		return err
	}
	lo, hi := t.PagesPerWorker[0], t.PagesPerWorker[0]
	for _, n := range t.PagesPerWorker {
		lo, hi = min(lo, n), max(hi, n)
	}
	b, err := json.MarshalIndent(map[string]any{
		"pages": t.Stats.Pages, "links": t.Stats.Links, "distinct": t.Stats.Distinct, "workers": *workers,
		"hosts": *hosts, "polite_gap": *polite, "order": *order,
		"affine_pages_per_worker_min": lo, "affine_pages_per_worker_max": hi,
		"affine_pages_per_worker_mean": float64(t.Stats.Pages) / float64(*workers),
	}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, "emulate.json"), append(b, '\n'), 0o644)
}

// writePWCSV writes per-worker results in perworker.csv's columns.
func writePWCSV(path string, res []PWResult) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	cw := csv.NewWriter(fh)
	_ = cw.Write([]string{"algorithm", "workers", "assignment", "k_total", "k_per_worker", "requests", "misses", "miss_rate"})
	for _, r := range res {
		_ = cw.Write([]string{r.Algo, strconv.Itoa(r.Workers), r.Assignment, strconv.Itoa(r.KTotal), strconv.Itoa(r.KPer),
			strconv.FormatUint(r.Requests, 10), strconv.FormatUint(r.Misses, 10), strconv.FormatFloat(r.MissRate, 'f', 6, 64)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return fh.Close()
}
