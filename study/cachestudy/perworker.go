package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/cache/cachesim"
)

// Tagged is a trace whose records carry worker tags (study/tracecrawl: the
// tag packs the worker index in its low WBits bits and the worker's page
// counter in the rest).
type Tagged struct {
	FPs   []uint64
	Tags  []uint16
	WBits uint // bits of the tag that hold the worker index
}

// ErrNoTags is returned for a trace without worker tags.
var ErrNoTags = errors.New("cachestudy: trace has no worker tags")

// ReadTagged reads a worker-tagged trace; crawlWorkers is the number of
// workers per node of the crawl that wrote it.
func ReadTagged(path string, crawlWorkers int) (*Tagged, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := cachesim.NewTraceReader(f)
	if err != nil {
		return nil, fmt.Errorf("cachestudy: %s: %w", path, err)
	}
	defer r.Close()
	if !r.WorkerTags() {
		return nil, fmt.Errorf("%w: %s", ErrNoTags, path)
	}
	t := &Tagged{WBits: wbits(crawlWorkers)}
	for {
		fp, tag, err := r.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cachestudy: %s: %w", path, err)
		}
		t.FPs = append(t.FPs, fp)
		t.Tags = append(t.Tags, tag)
	}
}

// wbits is the number of bits that hold a worker index below n.
func wbits(n int) uint {
	var b uint
	for 1<<b < n {
		b++
	}
	return b
}

// Assign maps every record to one of w virtual workers and returns the
// assignment. With T = 1<<WBits real workers: for w ≤ T a virtual worker is
// the real worker index mod w (whole workers merged); for w > T each real
// worker's pages are dealt round-robin to ⌈w/T⌉ virtual workers (virtual
// id = (worker + T·(page mod ⌈w/T⌉)) mod w), so a page is never split. Both
// are approximations of a crawl that really had w workers (the frontier
// would hand pages out in another order); w = T is the crawl itself.
func (t *Tagged) Assign(w int) []uint16 {
	out := make([]uint16, len(t.Tags))
	T := 1 << t.WBits
	mask := uint16(T - 1)
	m := (w + T - 1) / T
	for i, tag := range t.Tags {
		wk := int(tag & mask)
		if w <= T {
			out[i] = uint16(wk % w)
			continue
		}
		page := int(tag >> t.WBits)
		out[i] = uint16((wk + T*(page%m)) % w)
	}
	return out
}

// PWResult is one point of the per-worker study.
type PWResult struct {
	Algo       string
	Workers    int // 1 = one global cache; "sharded" = one cache.NewShared-style sharded cache
	Sharded    bool
	KTotal     int
	KPer       int
	Requests   uint64
	Misses     uint64
	MissRate   float64
	Assignment string
}

// ReplayPerWorker replays fps through w caches of kTotal/w entries each, the
// record i going to the cache assign[i]; w = 1 is one global cache.
func ReplayPerWorker(algo string, fps []uint64, assign []uint16, w, kTotal int) (uint64, error) {
	per := kTotal / w
	cs := make([]cache.Cache, w)
	for i := range cs {
		c, err := cache.New(algo, per)
		if err != nil {
			return 0, err
		}
		cs[i] = c
	}
	var misses uint64
	if w == 1 {
		c := cs[0]
		for _, fp := range fps {
			if !c.Seen(fp) {
				misses++
			}
		}
		return misses, nil
	}
	for i, fp := range fps {
		if !cs[assign[i]].Seen(fp) {
			misses++
		}
	}
	return misses, nil
}

// ReplaySharded replays fps through one cache.NewShared cache of kTotal
// entries (64 shards): what the live crawler's --cache-shared uses. kTotal
// must be a multiple of the 64 shards (NewShared rounds up).
func ReplaySharded(algo string, fps []uint64, kTotal int) (uint64, error) {
	s, err := cache.NewShared(algo, kTotal, 0)
	if err != nil {
		return 0, err
	}
	if s.Cap() != kTotal {
		return 0, fmt.Errorf("cachestudy: shared cache of %d entries holds %d", kTotal, s.Cap())
	}
	var misses uint64
	for _, fp := range fps {
		if !s.Seen(fp) {
			misses++
		}
	}
	return misses, nil
}

// PerWorkerStudy runs every (algo, w, k) with k ≥ w, plus the sharded
// global cache at every k ≥ 64, procs at a time.
func PerWorkerStudy(ctx context.Context, t *Tagged, algos []string, ws, ks []int, procs int) ([]PWResult, error) {
	assigns := map[int][]uint16{}
	for _, w := range ws {
		if w > 1 {
			assigns[w] = t.Assign(w)
		}
	}
	var jobs []PWResult
	for _, a := range algos {
		for _, k := range ks {
			for _, w := range ws {
				if k >= w {
					jobs = append(jobs, PWResult{Algo: a, Workers: w, KTotal: k, KPer: k / w})
				}
			}
			if k >= 64 && k%64 == 0 {
				jobs = append(jobs, PWResult{Algo: a, Workers: 1, Sharded: true, KTotal: k, KPer: k})
			}
		}
	}
	if procs <= 0 {
		procs = runtime.GOMAXPROCS(0)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int
		errs []error
	)
	for range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(jobs) || ctx.Err() != nil {
					return
				}
				j := &jobs[i]
				var m uint64
				var err error
				if j.Sharded {
					m, err = ReplaySharded(j.Algo, t.FPs, j.KTotal)
				} else {
					m, err = ReplayPerWorker(j.Algo, t.FPs, assigns[j.Workers], j.Workers, j.KTotal)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				j.Requests, j.Misses = uint64(len(t.FPs)), m
				j.MissRate = float64(m) / float64(max(len(t.FPs), 1))
				switch {
				case j.Sharded:
					j.Assignment = "shared-64-shards"
				case j.Workers == 1:
					j.Assignment = "global"
				case j.Workers == 1<<t.WBits:
					j.Assignment = "crawl-workers"
				case j.Workers < 1<<t.WBits:
					j.Assignment = "worker-mod-W"
				default:
					j.Assignment = "pages-dealt-to-W"
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return nil, err
	}
	return jobs, nil
}
