package main

import (
	"context"
	"testing"

	"github.com/sextant-crawler/sextant/simweb"
)

func smallWeb(t *testing.T) *simweb.Web {
	t.Helper()
	cfg := simweb.DefaultConfig()
	cfg.Hosts, cfg.PagesPerHost, cfg.NoPathologies = 20, 20, true
	web, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return web
}

// Every link is tagged with its page's worker under both assignments, and
// a page's links share their workers.
func TestEmulateDispatchTags(t *testing.T) {
	const W = 4096 // more than the web's pages: the round-robin worker names the page
	tr, err := EmulateDispatch(smallWeb(t), EmulateOptions{Order: OrderBFS, Polite: 8}, W)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.FPs) != tr.Stats.Links || len(tr.Affine) != len(tr.FPs) || len(tr.RRob) != len(tr.FPs) || tr.Stats.Links == 0 {
		t.Fatalf("%d fingerprints, %d/%d tags, %d links", len(tr.FPs), len(tr.Affine), len(tr.RRob), tr.Stats.Links)
	}
	sum := 0
	for _, n := range tr.PagesPerWorker {
		sum += n
	}
	if sum != tr.Stats.Pages {
		t.Errorf("pages per worker sum to %d, want %d", sum, tr.Stats.Pages)
	}
	if tr.Stats.Pages >= W {
		t.Fatalf("%d pages: the test needs fewer than %d", tr.Stats.Pages, W)
	}
	affineOf := map[uint16]uint16{} // page → its host's worker
	for i, p := range tr.RRob {
		if a, ok := affineOf[p]; ok && a != tr.Affine[i] {
			t.Fatalf("link %d: page %d's links on host-affine workers %d and %d", i, p, a, tr.Affine[i])
		}
		affineOf[p] = tr.Affine[i]
	}
}

// With one worker the three assignments are one cache; with several, the
// global cache is ReplayPerWorker's one cache, and binding hosts to
// workers misses less than dealing pages round-robin (simweb's links are
// mostly within the host).
func TestDispatchStudy(t *testing.T) {
	web := smallWeb(t)
	for _, W := range []int{1, 4} {
		tr, err := EmulateDispatch(web, EmulateOptions{Order: OrderBFS, Polite: 8}, W)
		if err != nil {
			t.Fatal(err)
		}
		res, err := DispatchStudy(context.Background(), tr, []string{"lru"}, W, []int{64})
		if err != nil {
			t.Fatal(err)
		}
		miss := map[string]uint64{}
		for _, r := range res {
			miss[r.Assignment] = r.Misses
		}
		g, _ := ReplayPerWorker("lru", tr.FPs, nil, 1, 64)
		switch {
		case miss[AssignGlobal] != g:
			t.Errorf("W=%d: global %d misses, one cache %d", W, miss[AssignGlobal], g)
		case W == 1 && (miss[AssignHostAffine] != g || miss[AssignRoundRobin] != g):
			t.Errorf("W=1: %v, want all %d", miss, g)
		case W > 1 && miss[AssignHostAffine] >= miss[AssignRoundRobin]:
			t.Errorf("W=%d: host-affine %d misses ≥ round-robin %d", W, miss[AssignHostAffine], miss[AssignRoundRobin])
		}
	}
}
