package cachesim

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sextant-crawler/sextant/cache/internal/reftest"
	"github.com/sextant-crawler/sextant/cache/tracegen"
)

// minOnePass runs minStackMisses on a trace of fingerprints.
func minOnePass(t testing.TB, tr []uint64, ks []int) []uint64 {
	t.Helper()
	ids, d := densify(tr)
	next := nextUses(ids, d)
	got, err := minStackMisses(ids, next, d, ks, &meter{ctx: context.Background()})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// minPerSize runs the per-size MIN simulation (the reference) at every size.
func minPerSize(t testing.TB, tr []uint64, ks []int) []uint64 {
	t.Helper()
	ids, d := densify(tr)
	next := nextUses(ids, d)
	out := make([]uint64, len(ks))
	for i, k := range ks {
		v, err := minMisses(ids, next, d, k, &meter{ctx: context.Background()})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = v
	}
	return out
}

// adversarialTraces stress the level bookkeeping: loops just larger than a
// size (every request carried through every level), sawtooth scans that
// reverse direction, items never requested again mixed with hot ones, and
// one item repeated (always on top).
func adversarialTraces(r *rand.Rand) map[string][]uint64 {
	m := map[string][]uint64{}
	for _, u := range []int{2, 3, 5, 9, 17, 33, 65} {
		m["loop"+itoa(u)] = reftest.Loop(700, u)
	}
	var saw []uint64
	for len(saw) < 900 {
		for i := 1; i <= 40; i++ {
			saw = append(saw, uint64(i))
		}
		for i := 40; i >= 1; i-- {
			saw = append(saw, uint64(i))
		}
	}
	m["sawtooth"] = saw
	var oneOff []uint64
	for i := range 800 {
		if i%3 == 0 {
			oneOff = append(oneOff, uint64(1_000_000+i)) // never again
		} else {
			oneOff = append(oneOff, uint64(r.IntN(20)+1))
		}
	}
	m["oneoff"] = oneOff
	same := make([]uint64, 300)
	for i := range same {
		same[i] = 42
	}
	m["same"] = same
	m["distinct"] = reftest.Loop(300, 300)
	m["empty"] = nil
	nested := []uint64{}
	for i := range 1000 {
		// nested loops of sizes 4, 16, 64 interleaved
		nested = append(nested, uint64(i%4+1), uint64(i%16+100), uint64(i%64+1000))
	}
	m["nested"] = nested
	return m
}

func itoa(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

// The one-pass MIN equals the per-size MIN (and the brute-force reference) at
// every size, on random and adversarial traces, for power-of-two sizes and for
// arbitrary ones (including 0 and sizes ≥ the number of distinct items).
func TestMINOnePassEqualsPerSize(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	traces := adversarialTraces(r)
	for name, tr := range reftest.Shapes(r) {
		traces[name] = tr
	}
	for i := range 60 {
		traces["rand"+itoa(i)] = reftest.Random(r, 100+r.IntN(900), 2+r.IntN(200))
	}
	for i := range 20 {
		tr, _ := tracegen.Generate(tracegen.Options{Seed: uint64(i) + 7, Universe: 300, Window: 64}, 1500)
		traces["gen"+itoa(i)] = tr
	}
	pow := PowersOfTwo(0, 10)
	for name, tr := range traces {
		for _, ks := range [][]int{
			pow,
			{0, 1, 2, 3, 5, 7, 11, 13, 29, 64, 100, 250},
			{7},
			{1, 1000},
			randomSizes(r),
		} {
			got := minOnePass(t, tr, ks)
			want := minPerSize(t, tr, ks)
			if !slices.Equal(got, want) {
				t.Fatalf("%s ks=%v:\none pass %v\nper size %v", name, ks, got, want)
			}
			if len(tr) <= 1000 && len(ks) <= 4 {
				for i, k := range ks {
					if ref := refMIN(tr, k); ref != got[i] {
						t.Fatalf("%s k=%d: one pass %d, brute force %d", name, k, got[i], ref)
					}
				}
			}
		}
	}
}

func randomSizes(r *rand.Rand) []int {
	var ks []int
	for range 1 + r.IntN(8) {
		ks = append(ks, r.IntN(120))
	}
	slices.Sort(ks)
	return slices.Compact(ks)
}

// A larger trace with locality, where the deep levels are busy: one pass and
// per size agree at every power of two.
func TestMINOnePassEqualsPerSizeLarge(t *testing.T) {
	tr, err := tracegen.Generate(tracegen.Options{Seed: 9, Window: 1 << 12, FarMin: 1 << 6, Universe: 1 << 14}, 300000)
	if err != nil {
		t.Fatal(err)
	}
	ks := PowersOfTwo(0, 17)
	got := minOnePass(t, tr, ks)
	want := minPerSize(t, tr, ks)
	if !slices.Equal(got, want) {
		t.Fatalf("one pass %v\nper size %v", got, want)
	}
}

func TestMINOnePassTooManySizes(t *testing.T) {
	tr := reftest.Loop(2000, 1000)
	ks := make([]int, 300)
	for i := range ks {
		ks[i] = i + 1
	}
	ids, d := densify(tr)
	if _, err := minStackMisses(ids, nextUses(ids, d), d, ks, &meter{ctx: context.Background()}); err == nil {
		t.Fatal("300 sizes accepted")
	}
}
