package cachesim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/cache/internal/reftest"
)

func TestStaticMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, tr := range reftest.Shapes(r) {
		for _, k := range testKs {
			if got, want := run(NewStatic(TopK(tr, k)), tr), refStatic(tr, k); got != want {
				t.Errorf("%s k=%d: STATIC misses %d, reference %d", name, k, got, want)
			}
		}
	}
}

// The Robin Hood table behind LRU, STATIC and the simulator keeps its
// invariants: no gap between an entry's home and its slot, find agrees.
func TestRobinHoodInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for name, tr := range reftest.Shapes(r) {
		tb := newTable(97, true, true)
		in := map[uint64]bool{}
		for i, fp := range tr {
			fp = cache.Key(fp)
			switch {
			case in[fp] && i%3 == 0:
				tb.remove(uint64(tb.find(fp)))
				delete(in, fp)
			case !in[fp] && tb.n < 90:
				tb.insert(fp, uint32(i), i%2 == 0)
				in[fp] = true
			}
			n := 0
			for j, s := range tb.slots {
				if s == 0 {
					if tb.mark(uint64(j)) {
						t.Fatalf("%s: empty slot %d marked", name, j)
					}
					continue
				}
				n++
				for h := tb.home(s); h != uint64(j); h = (h + 1) % tb.m {
					if tb.slots[h] == 0 {
						t.Fatalf("%s: gap at %d before %#x in slot %d", name, h, s, j)
					}
				}
				if !in[s] || tb.find(s) != j {
					t.Fatalf("%s: %#x at %d: in=%v find=%d", name, s, j, in[s], tb.find(s))
				}
			}
			if n != len(in) || n != tb.n {
				t.Fatalf("%s: %d stored, %d expected, n=%d", name, n, len(in), tb.n)
			}
			for fp := range in {
				if tb.find(fp) < 0 {
					t.Fatalf("%s: %#x lost", name, fp)
				}
			}
		}
	}
}

func TestTopKOrder(t *testing.T) {
	tr := []uint64{5, 3, 3, 9, 9, 9, 5, 7}
	got := TopK(tr, 3)
	want := []uint64{9, 5, 3}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("TopK = %v, want %v", got, want)
	}
	if !sort.SliceIsSorted(testKs, func(i, j int) bool { return testKs[i] < testKs[j] }) {
		t.Fatal("testKs unsorted")
	}
}

func TestParseAlgos(t *testing.T) {
	if _, err := ParseAlgos("clock,nope"); !errors.Is(err, ErrUnknownAlgo) {
		t.Errorf("ParseAlgos accepted nope: %v", err)
	}
	if a, err := ParseAlgos(" LRU,min,lru,clock-exact"); err != nil || fmt.Sprint(a) != "[lru min clock-exact]" {
		t.Errorf("ParseAlgos = %v, %v", a, err)
	}
}
