package cache

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sextant-crawler/sextant/cache/internal/reftest"
	"github.com/sextant-crawler/sextant/cache/tracegen"
)

func run(c Cache, trace []uint64) uint64 {
	for _, fp := range trace {
		c.Seen(fp)
	}
	return c.Stats().Misses
}

var testKs = []int{0, 1, 2, 3, 5, 8, 13, 31, 64, 100, 400}

func TestInfiniteMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, tr := range reftest.Shapes(r) {
		if got, want := run(NewInfinite(), tr), reftest.Infinite(tr); got != want {
			t.Errorf("%s: INFINITE misses %d, reference %d", name, got, want)
		}
	}
}

func TestLRUMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for name, tr := range reftest.Shapes(r) {
		for _, k := range testKs {
			if got, want := run(NewLRU(k), tr), reftest.LRU(tr, k); got != want {
				t.Errorf("%s k=%d: LRU misses %d, reference %d", name, k, got, want)
			}
		}
	}
}

// tableContents returns fingerprint → mark for every stored entry, checking
// the scatter table's invariants on the way.
func tableContents(t *testing.T, tb *ctable) map[uint64]bool {
	t.Helper()
	out := map[uint64]bool{}
	n := 0
	for i := range tb.m() {
		s := tb.slot(i)
		if tb.occ != nil && (s != 0) != (tb.occ[i/bucketSlots]&(1<<(i%bucketSlots)) != 0) {
			t.Fatalf("slot %d holds %#x, occupancy bit says otherwise", i, s)
		}
		if s == 0 {
			if tb.mark(i) {
				t.Fatalf("empty slot %d is marked", i)
			}
			continue
		}
		n++
		b1, b2 := tb.buckets(s)
		if b := i / bucketSlots; b != b1 && b != b2 {
			t.Fatalf("%#x in bucket %d, not its own %d or %d", s, b, b1, b2)
		}
		if _, dup := out[s]; dup {
			t.Fatalf("%#x stored twice", s)
		}
		if tb.find(s) != int(i) {
			t.Fatalf("find(%#x) = %d, stored at %d", s, tb.find(s), i)
		}
		out[s] = tb.mark(i)
	}
	if n != tb.n {
		t.Fatalf("table counts %d entries, holds %d", tb.n, n)
	}
	for b := tb.nb; b < uint64(len(tb.marks)); b++ {
		if tb.marks[b] != 0 || (tb.occ != nil && tb.occ[b] != 0) {
			t.Fatalf("padding byte %d of the marks or occupancy set", b)
		}
	}
	if tb.drops != 0 {
		t.Fatalf("%d entries dropped by displacement walks", tb.drops)
	}
	return out
}

// pairView lists the 16 slots of fp's bucket pair in the order the CLOCK
// hand visits them (bucket b1's slots 0–7, then b2's; b2's half is left out
// when b1 == b2).
func pairView(tb *ctable, fp uint64) []uint64 {
	b1, b2 := tb.buckets(Key(fp))
	var idx []uint64
	for j := range uint64(bucketSlots) {
		idx = append(idx, b1*bucketSlots+j)
	}
	if b2 != b1 {
		for j := range uint64(bucketSlots) {
			idx = append(idx, b2*bucketSlots+j)
		}
	}
	return idx
}

// The CLOCK policy checked step by step against a brute-force model of its
// state by fingerprint: a hit sets the mark; a miss with the cache full
// either (if one of the new entry's buckets has a free slot) evicts the
// first unmarked entry from the hand on (in table order), clearing the
// marks it passes, or (both buckets full: the deliberate approximation, see
// Clock) evicts the first unmarked resident of the pair's sixteen slots
// from localStart(fp) on, cyclically (the first resident from there if all
// are marked), clearing no mark and leaving the hand; the new entry is
// marked. Sizes from 600 up have occupancy bits and take Seen's fast path.
func TestClockMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	type run struct {
		name string
		tr   []uint64
		ks   []int
	}
	var runs []run
	for name, tr := range reftest.Shapes(r) {
		runs = append(runs, run{name, tr, []int{0, 1, 2, 3, 7, 31, 64, 130}})
	}
	big, _ := tracegen.Generate(tracegen.Options{Seed: 11, Universe: 4000, Window: 2000}, 6000)
	runs = append(runs,
		run{"wide-big", reftest.Random(r, 6000, 1500), []int{600, 1000}},
		run{"locality-big", big, []int{600, 1000}},
		run{"small-big", reftest.Small(r, 6000, 1500), []int{600}})
	for _, ru := range runs {
		name, tr := ru.name, ru.tr
		for _, k := range ru.ks {
			c := NewClock(k)
			if k >= 600 && c.t.occ == nil {
				t.Fatalf("k=%d: no occupancy bits", k)
			}
			model := map[uint64]bool{}
			for step, fp := range tr {
				fp := Key(fp)
				var wantVictim uint64
				passed := map[uint64]bool{}
				if _, in := model[fp]; !in && len(model) >= k && k > 0 {
					pair := pairView(&c.t, fp)
					if len(pair) == bucketSlots {
						pair = append(pair, pair...) // b1 == b2: the bucket twice
					}
					full := true
					for _, i := range pair {
						full = full && c.t.slot(i) != 0
					}
					if full {
						start := localStart(fp)
						for _, unmarkedOnly := range []bool{true, false} {
							for d := range 16 {
								s := c.t.slot(pair[(start+d)%16])
								if !unmarkedOnly || !model[s] {
									wantVictim = s
									break
								}
							}
							if wantVictim != 0 {
								break
							}
						}
					} else {
						for i := c.hand; ; i = c.step(i) {
							s := c.t.slot(i)
							if s == 0 {
								continue
							}
							if !model[s] || passed[s] { // unmarked, or a full turn
								wantVictim = s
								break
							}
							passed[s] = true
						}
					}
				}
				_, wantHit := model[fp]
				if got := c.Seen(fp); got != wantHit {
					t.Fatalf("%s k=%d step %d: Seen = %v, want %v", name, k, step, got, wantHit)
				}
				for s := range passed {
					model[s] = false
				}
				if wantVictim != 0 {
					delete(model, wantVictim)
				}
				if k > 0 {
					model[fp] = true
				}
				if c.hand >= c.t.m() { // Seen's unchecked windows rely on it
					t.Fatalf("%s k=%d step %d: hand %d beyond the table's %d slots", name, k, step, c.hand, c.t.m())
				}
				got := tableContents(t, &c.t)
				if len(got) != len(model) {
					t.Fatalf("%s k=%d step %d: %d entries, model %d", name, k, step, len(got), len(model))
				}
				for s, m := range model {
					if gm, ok := got[s]; !ok || gm != m {
						t.Fatalf("%s k=%d step %d: entry %#x present=%v mark=%v, model mark %v", name, k, step, s, ok, gm, m)
					}
				}
			}
		}
	}
}

// RANDOM: hits exactly when the entry is present; while the cache fills a
// miss evicts nothing; once it is full a miss evicts exactly one entry, from
// the new fingerprint's bucket pair when the pair has a resident.
func TestRandomMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for name, tr := range reftest.Shapes(r) {
		for _, k := range []int{0, 1, 2, 5, 31, 64, 130} {
			c := NewRandom(k, 9)
			for step, fp := range tr {
				fp := Key(fp)
				before := tableContents(t, &c.t)
				inPair := map[uint64]bool{}
				for _, i := range pairView(&c.t, fp) {
					if s := c.t.slot(i); s != 0 {
						inPair[s] = true
					}
				}
				_, hit := before[fp]
				if got := c.Seen(fp); got != hit {
					t.Fatalf("%s k=%d step %d: Seen = %v, want %v", name, k, step, got, hit)
				}
				got := tableContents(t, &c.t)
				if len(got) > k {
					t.Fatalf("%s k=%d: %d entries", name, k, len(got))
				}
				if hit || k == 0 {
					if !maps.Equal(got, before) {
						t.Fatalf("%s k=%d step %d: contents changed on a hit", name, k, step)
					}
					continue
				}
				if _, ok := got[fp]; !ok {
					t.Fatalf("%s k=%d step %d: %#x not inserted", name, k, step, fp)
				}
				var gone []uint64
				for s := range before {
					if _, ok := got[s]; !ok {
						gone = append(gone, s)
					}
				}
				wantGone := 0
				if len(before) >= k {
					wantGone = 1
				}
				if len(gone) != wantGone {
					t.Fatalf("%s k=%d step %d: %d entries evicted, want %d", name, k, step, len(gone), wantGone)
				}
				if len(gone) == 1 && len(inPair) > 0 && !inPair[gone[0]] {
					t.Fatalf("%s k=%d step %d: evicted %#x from outside the bucket pair", name, k, step, gone[0])
				}
			}
		}
	}
}

// clone returns an independent copy of c.
func (c *Random) clone() *Random {
	d := *c
	d.t.bk = slices.Clone(c.t.bk)
	d.t.marks = slices.Clone(c.t.marks)
	return &d
}

// RANDOM evicts uniformly among the residents of the new fingerprint's
// bucket pair: over many seeds, every resident of a full pair is the victim
// about equally often.
func TestRandomEvictsUniformly(t *testing.T) {
	const k, rounds = 1000, 8000
	base := NewRandom(k, 1)
	for i := range k {
		base.Seen(mix64(uint64(i) + 1))
	}
	for _, fp := range []uint64{mix64(1 << 40), mix64(1<<40 + 1)} {
		residents := map[uint64]int{}
		for _, i := range pairView(&base.t, fp) {
			if s := base.t.slot(i); s != 0 {
				residents[s] = 0
			}
		}
		for round := range rounds {
			c := base.clone()
			c.rng = uint64(round) + 2
			c.Seen(fp)
			for s := range residents {
				if c.t.find(s) < 0 {
					residents[s]++
				}
			}
		}
		want := float64(rounds) / float64(len(residents))
		for s, n := range residents {
			if p := float64(n) / want; p < 0.75 || p > 1.25 {
				t.Errorf("%#x evicted %d times of %d, want ≈ %.0f (%d residents)", s, n, rounds, want, len(residents))
			}
		}
	}
}

func TestZeroFingerprint(t *testing.T) {
	for _, algo := range OnlineAlgorithms {
		c, _ := New(algo, 4)
		if c.Seen(0) || !c.Seen(0) {
			t.Errorf("%s: fingerprint 0 not cached", algo)
		}
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	if _, err := New("fifo", 3); err == nil {
		t.Error("unknown algorithm accepted")
	}
	if _, err := New("clock", -1); err == nil {
		t.Error("negative size accepted")
	}
	if _, err := New("lru", MaxLRU+1); !errors.Is(err, ErrBadSize) {
		t.Errorf("LRU above MaxLRU: %v, want ErrBadSize", err)
	}
}

// CLOCK (global hand in table order; eviction within the pair when both of
// the new fingerprint's buckets are full) and set-associative RANDOM
// (eviction within the new fingerprint's bucket pair) against textbook
// CLOCK and RANDOM (k frames, a global hand in insertion order or a uniform
// victim) on random, Zipf + recency and adversarial traces: every miss rate
// stays within 0.5 points of the textbook's (measured when this test was
// written: within 0.35 for both; with CLOCK's eviction within the pair,
// within 0.38). One exception, in our favour: a loop over k+1
// items, where textbook CLOCK misses every request and the table-order hand
// 4.5–33% (the table order is not the loop's order). A set-associative CLOCK
// (a hand over the pair's 16 slots), tried, missed 1.0–1.8 points more than
// textbook on the default stream scaled down here, and was not kept.
func TestCloseToTextbook(t *testing.T) {
	// The default stream scaled down 16× (window, far distances, universe),
	// at sizes in and around its critical region.
	scaled, err := tracegen.Generate(tracegen.Options{Seed: 3, Window: 1 << 14, FarMin: 1 << 8, Universe: 1 << 18}, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{16, 2048, 16384} {
		n := float64(len(scaled))
		cs := 100 * float64(run(NewClock(k), scaled)) / n
		ct := 100 * float64(textbookClock(scaled, k)) / n
		rs := 100 * float64(run(NewRandom(k, 1), scaled)) / n
		rt := 100 * float64(textbookRandom(scaled, k, 1)) / n
		t.Logf("k=%d default/16     CLOCK %6.2f%% (textbook %6.2f%%, %+.2f)  RANDOM %6.2f%% (textbook %6.2f%%, %+.2f)", k, cs, ct, cs-ct, rs, rt, rs-rt)
		if d := cs - ct; d > 0.5 || d < -0.5 {
			t.Errorf("k=%d default/16: CLOCK %.2f%%, textbook %.2f%%: %+.2f points, bound 0.5", k, cs, ct, d)
		}
		if d := rs - rt; d > 0.5 || d < -0.5 {
			t.Errorf("k=%d default/16: RANDOM %.2f%%, textbook %.2f%%: %+.2f points, bound 0.5", k, rs, rt, d)
		}
	}
	r := rand.New(rand.NewPCG(41, 42))
	for _, k := range []int{16, 256, 4096} {
		n := max(40*k, 60000)
		zipf, err := tracegen.Generate(tracegen.Options{Seed: uint64(k), Universe: uint64(8 * k), Window: 16 * k, FarMin: k / 4}, n)
		if err != nil {
			t.Fatal(err)
		}
		traces := []struct {
			name        string
			tr          []uint64
			bound       float64 // |set-associative − textbook| in points
			clockBetter bool    // CLOCK: only set-associative ≤ textbook is checked
		}{
			{"uniform 2k", reftest.Random(r, n, 2*k), 0.5, false},
			{"uniform 1.2k", reftest.Random(r, n, k+k/5+1), 0.5, false},
			{"zipf+recency", zipf, 0.5, false},
			{"small keys", reftest.Small(r, n, 2*k), 0.5, false},
			{"loop 0.9k", reftest.Loop(n, k*9/10+1), 0.5, false},
			{"loop k+1", reftest.Loop(n, k+1), 0.5, true},
		}
		for _, tc := range traces {
			fn := float64(len(tc.tr))
			cs := 100 * float64(run(NewClock(k), tc.tr)) / fn
			ct := 100 * float64(textbookClock(tc.tr, k)) / fn
			var rs, rt float64
			for seed := range uint64(3) {
				rs += 100 * float64(run(NewRandom(k, seed+1), tc.tr)) / fn / 3
				rt += 100 * float64(textbookRandom(tc.tr, k, seed+1)) / fn / 3
			}
			t.Logf("k=%d %-13s CLOCK %6.2f%% (textbook %6.2f%%, %+.2f)  RANDOM %6.2f%% (textbook %6.2f%%, %+.2f)", k, tc.name, cs, ct, cs-ct, rs, rt, rs-rt)
			if d := cs - ct; d > tc.bound || (!tc.clockBetter && d < -tc.bound) {
				t.Errorf("k=%d %s: CLOCK %.2f%%, textbook %.2f%%: %+.2f points, bound %.1f", k, tc.name, cs, ct, d, tc.bound)
			}
			if d := rs - rt; d > tc.bound || d < -tc.bound {
				t.Errorf("k=%d %s: RANDOM %.2f%%, textbook %.2f%%: %+.2f points, bound %.1f", k, tc.name, rs, rt, d, tc.bound)
			}
		}
	}
}

// The two-choice table's adversary: fingerprints crafted to share one
// bucket pair. At most 16 of them fit (CLOCK's displacement walks for the
// others fail and drop an entry; RANDOM evicts within the pair), so a loop
// over 40 of them, mixed into a Zipf + recency stream, thrashes in those 16
// slots where a textbook cache of k ≥ 40 would keep them (measured: 91% of
// their requests miss with CLOCK, 92% with RANDOM), but the damage stays
// there: the rest of the stream misses within 1.2 points of the textbook's
// rate on that stream alone. (Finding such URLs
// needs the table size and ~nb²/2 hashing attempts per URL, and buys the
// attacker only misses on its own URLs, which the DUE then answers.)
func TestPairCollisionConfined(t *testing.T) {
	const k = 1024
	bg, err := tracegen.Generate(tracegen.Options{Seed: 5, Universe: 8 * k, Window: 16 * k, FarMin: k / 4}, 200000)
	if err != nil {
		t.Fatal(err)
	}
	clock, random := NewClock(k), NewRandom(k, 1)
	for _, policy := range []struct {
		name string
		set  Cache
		t    *ctable
	}{
		{"CLOCK", clock, &clock.t},
		{"RANDOM", random, &random.t},
	} {
		// The colliding fingerprints of this policy's table: CLOCK's and
		// RANDOM's have different numbers of buckets.
		evil := pairCollisions(policy.t, mix64(1<<50), 1<<51, 40)
		var tr []uint64
		isEvil := map[uint64]bool{}
		for _, fp := range evil {
			isEvil[fp] = true
		}
		for i, fp := range bg {
			tr = append(tr, fp)
			if i%10 == 0 {
				tr = append(tr, evil[(i/10)%len(evil)])
			}
		}
		var missEvil, missRest, nEvil, nRest float64
		for _, fp := range tr {
			hit := policy.set.Seen(fp)
			if isEvil[fp] {
				nEvil++
				if !hit {
					missEvil++
				}
			} else {
				nRest++
				if !hit {
					missRest++
				}
			}
		}
		var ref float64
		if policy.name == "CLOCK" {
			ref = float64(textbookClock(bg, k)) / float64(len(bg))
		} else {
			ref = float64(textbookRandom(bg, k, 1)) / float64(len(bg))
		}
		t.Logf("%s: colliding fingerprints miss %.1f%%, the rest %.2f%% (textbook on the rest alone: %.2f%%)", policy.name, 100*missEvil/nEvil, 100*missRest/nRest, 100*ref)
		if missEvil/nEvil < 0.5 {
			t.Errorf("%s: 40 fingerprints in one 16-slot pair miss only %.1f%%", policy.name, 100*missEvil/nEvil)
		}
		if d := missRest/nRest - ref; d > 0.012 || d < -0.012 {
			t.Errorf("%s: the rest of the stream misses %.2f%%, textbook %.2f%%", policy.name, 100*missRest/nRest, 100*ref)
		}
	}
}

func TestBytesPerEntry(t *testing.T) {
	for _, k := range []int{256, 500, 1 << 10, 50000, 1 << 16, 1 << 20} {
		for _, c := range []interface{ Bytes() int }{NewClock(k), NewRandom(k, 1)} {
			if b := float64(c.Bytes()) / float64(k); b > 9 {
				t.Errorf("%T k=%d: %.2f bytes per entry, want ≤ 9", c, k, b)
			}
		}
	}
}
