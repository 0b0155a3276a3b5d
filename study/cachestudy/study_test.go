package main

import (
	"context"
	"testing"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/simweb"
)

// tagged builds a trace of T workers, each fetching pages of n links; the
// links of page p of worker w are hot[0:h] followed by fresh fingerprints.
func tagged(T, pages, n, h int) *Tagged {
	t := &Tagged{WBits: wbits(T)}
	fresh := uint64(1 << 40)
	for p := range pages {
		for w := range T {
			for i := range n {
				fp := uint64(i + 1)
				if i >= h {
					fresh++
					fp = fresh
				}
				t.FPs = append(t.FPs, fp)
				t.Tags = append(t.Tags, uint16(w)|uint16(p<<t.WBits))
			}
		}
	}
	return t
}

func TestAssign(t *testing.T) {
	tr := tagged(32, 40, 3, 1)
	for _, w := range []int{1, 8, 32, 64, 500} {
		a := tr.Assign(w)
		pageOf := map[uint16]uint16{} // tag (worker, page) → virtual worker
		used := map[uint16]bool{}
		for i, tag := range tr.Tags {
			if int(a[i]) >= w {
				t.Fatalf("W=%d: virtual worker %d out of range", w, a[i])
			}
			if v, ok := pageOf[tag]; ok && v != a[i] {
				t.Fatalf("W=%d: a page was split over virtual workers %d and %d", w, v, a[i])
			}
			pageOf[tag] = a[i]
			used[a[i]] = true
			if w == 32 && int(a[i]) != int(tag&31) {
				t.Fatalf("W=32 must be the crawl's own workers")
			}
		}
		if want := min(w, 32*40); len(used) != want {
			t.Errorf("W=%d: %d virtual workers used, want %d", w, len(used), want)
		}
	}
}

func TestReplayGlobalEqualsOneCache(t *testing.T) {
	tr := tagged(8, 50, 20, 5)
	for _, k := range []int{1, 16, 256} {
		c := cache.NewClock(k)
		var want uint64
		for _, fp := range tr.FPs {
			if !c.Seen(fp) {
				want++
			}
		}
		got, err := ReplayPerWorker("clock", tr.FPs, nil, 1, k)
		if err != nil || got != want {
			t.Fatalf("k=%d: global replay %d misses (%v), one cache %d", k, got, err, want)
		}
	}
}

// Every worker requests the same 5 hot URLs on every page of 6 links: one
// cache of 8 entries keeps them (one miss each); 8 per-worker caches of 1
// entry cannot, and 8 per-worker caches of 8 keep them but each misses them
// once: the hot set is replicated in every worker's cache.
func TestPerWorkerReplicatesHotSet(t *testing.T) {
	tr := tagged(8, 50, 6, 5)
	fresh := uint64(len(tr.FPs) - 8*50*5)
	res, err := PerWorkerStudy(context.Background(), tr, []string{"lru"}, []int{1, 8}, []int{8, 64}, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]int]uint64{}
	for _, r := range res {
		if !r.Sharded {
			got[[2]int{r.Workers, r.KTotal}] = r.Misses
		}
	}
	if m := got[[2]int{1, 8}]; m != fresh+5 {
		t.Errorf("global k=8: %d misses, want %d", m, fresh+5)
	}
	if m := got[[2]int{8, 8}]; m != uint64(len(tr.FPs)) {
		t.Errorf("8 workers × 1: %d misses, want all %d", m, len(tr.FPs))
	}
	if m := got[[2]int{8, 64}]; m != fresh+8*5 {
		t.Errorf("8 workers × 8: %d misses, want %d", m, fresh+8*5)
	}
}

// The offline crawl of a web without pathologies fetches exactly the
// oracle's set, in every order.
func TestEmulateCrawlMatchesOracle(t *testing.T) {
	cfg := simweb.SmallConfig()
	cfg.NoPathologies = true
	web, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	or, err := web.Oracle(web.Seeds(), simweb.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	for _, polite := range []int{0, 8} {
		for _, o := range []string{OrderBFS, OrderInlinks, OrderRandom} {
			var n int
			st, err := EmulateCrawl(web, EmulateOptions{Order: o, Polite: polite}, func(uint64) { n++ })
			if err != nil {
				t.Fatal(err)
			}
			if st.Pages != or.Size() || n != st.Links || st.Links < st.Pages {
				t.Errorf("%s polite %d: %d pages (oracle %d), %d links (emitted %d)", o, polite, st.Pages, or.Size(), st.Links, n)
			}
			if polite > 0 && st.Pages-st.HostRuns > st.Idle {
				t.Errorf("%s polite %d: %d host runs for %d pages with %d idle jumps: a host was fetched twice in a row while others waited",
					o, polite, st.HostRuns, st.Pages, st.Idle)
			}
		}
	}
}
