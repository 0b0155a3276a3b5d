package cachesim

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/cache/internal/reftest"
	"github.com/sextant-crawler/sextant/cache/tracegen"
)

// refSecondChance is textbook CLOCK written as the second-chance queue, the
// frames listed from the hand on: a miss with the cache full pops the head,
// requeues it unmarked if it was marked, and otherwise replaces it by the
// new entry at the tail (where the hand has just passed). It shares no code
// with exactClockMisses.
func refSecondChance(trace []uint64, k int, markNew bool) uint64 {
	type frame struct {
		fp   uint64
		mark bool
	}
	var q []frame
	var misses uint64
	for _, fp := range trace {
		fp = cache.Key(fp)
		hit := false
		for i := range q {
			if q[i].fp == fp {
				q[i].mark, hit = true, true
				break
			}
		}
		if hit {
			continue
		}
		misses++
		if len(q) == k {
			for q[0].mark {
				q = append(q[1:], frame{q[0].fp, false})
			}
			q = q[1:]
		}
		q = append(q, frame{fp, markNew})
	}
	return misses
}

// clock-exact and clock-exact-marked equal the reference at every size from
// 1 to beyond the trace's distinct count, on traces with locality, loops and
// uniform draws.
func TestExactClockMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	loc, err := tracegen.Generate(tracegen.Options{Seed: 7, Universe: 150, Window: 64, FarMin: 8, Near: 8}, 3000)
	if err != nil {
		t.Fatal(err)
	}
	traces := map[string][]uint64{
		"locality": loc,
		"uniform":  reftest.Random(r, 2000, 90),
		"loop":     reftest.Loop(1500, 37),
	}
	for name, tr := range traces {
		d := int(reftest.Infinite(tr))
		var ks []int
		for k := 1; k <= d+3; k++ {
			ks = append(ks, k)
		}
		res, err := Simulate(context.Background(), tr, SimOptions{
			Algos: []string{AlgoClockExact, AlgoClockExactMarked}, Ks: ks, Procs: 2})
		if err != nil {
			t.Fatal(err)
		}
		got := byAlgoK(res)
		differ := 0
		for _, k := range ks {
			unmarked, marked := refSecondChance(tr, k, false), refSecondChance(tr, k, true)
			if g := got[AlgoClockExact][k].Misses; g != unmarked {
				t.Errorf("%s k=%d: clock-exact %d misses, reference %d", name, k, g, unmarked)
			}
			if g := got[AlgoClockExactMarked][k].Misses; g != marked {
				t.Errorf("%s k=%d: clock-exact-marked %d misses, reference %d", name, k, g, marked)
			}
			if marked != unmarked {
				differ++
			}
		}
		if differ == 0 && name != "loop" {
			t.Errorf("%s: the two variants never differ: the trace does not test the insert mark", name)
		}
	}
}
