package cache

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sextant-crawler/sextant/cache/internal/reftest"
)

// lruStep is the reference LRU one request at a time: a recency stack, most
// recent first.
type lruStep struct {
	stack []uint64
	k     int
}

func (r *lruStep) seen(fp uint64) bool {
	fp = Key(fp)
	if i := slices.Index(r.stack, fp); i >= 0 {
		r.stack = slices.Delete(r.stack, i, i+1)
		r.stack = slices.Insert(r.stack, 0, fp)
		return true
	}
	if r.k == 0 {
		return false
	}
	if len(r.stack) == r.k {
		r.stack = r.stack[:r.k-1]
	}
	r.stack = slices.Insert(r.stack, 0, fp)
	return false
}

// sameLRU runs c and the reference side by side over tr, failing at the
// first request on which they disagree, and returns the most entries c
// stashed at once.
func sameLRU(t *testing.T, name string, c *LRU, tr []uint64) int {
	t.Helper()
	ref := &lruStep{k: c.Cap()}
	most := 0
	for i, fp := range tr {
		if got, want := c.Seen(fp), ref.seen(fp); got != want {
			t.Fatalf("%s k=%d: request %d (%#x): LRU hit=%v, reference %v", name, c.Cap(), i, fp, got, want)
		}
		if c.Len() != len(ref.stack) {
			t.Fatalf("%s k=%d: request %d: Len %d, reference holds %d", name, c.Cap(), i, c.Len(), len(ref.stack))
		}
		most = max(most, len(c.stash.node))
		if i%7 == 0 || i == len(tr)-1 {
			checkLRU(t, c)
		}
	}
	return most
}

// checkLRU checks the LRU's invariants: every table entry is in one of
// its two buckets (the walk moved it there); stamps start at 1 (0 is an empty
// node's) and base + rn does not wrap; every resident node has exactly one
// live record (record r is stamped base + r), so its stamp lies in
// [base, base + rn); a node's stamp is 0 iff it is empty.
func checkLRU(t *testing.T, c *LRU) {
	t.Helper()
	if c.base == 0 || uint64(c.base)+uint64(c.rn) > math.MaxUint32 {
		t.Fatalf("k=%d: base %d with %d records", c.k, c.base, c.rn)
	}
	live := map[uint32]int{}
	for r := range c.rn {
		if node := c.ring[c.at(r)]; c.last[node] == c.base+uint32(r) {
			live[node]++
		}
	}
	for s, st := range c.last {
		if st != 0 && (st < c.base || st >= c.next()) {
			t.Fatalf("k=%d: node %d has stamp %d outside [%d, %d)", c.k, s, st, c.base, c.next())
		}
	}
	resident := 0
	for s := range uint32(len(c.last)) {
		full := false
		if s < c.m {
			full = c.t.used(uint64(s))
			if fp := c.t.slot(uint64(s)); full && uint64(s)/bucketSlots != c.t.b1(fp) && uint64(s)/bucketSlots != c.t.b2(fp) {
				t.Fatalf("k=%d: node %d holds %#x, whose buckets are %d and %d", c.k, s, fp, c.t.b1(fp), c.t.b2(fp))
			}
		} else {
			full = c.stash.fps[s-c.m] != 0
		}
		if full != (c.last[s] != 0) {
			t.Fatalf("k=%d: node %d occupied=%v but stamp %d", c.k, s, full, c.last[s])
		}
		if full {
			resident++
			if live[s] != 1 {
				t.Fatalf("k=%d: resident node %d has %d live records", c.k, s, live[s])
			}
		}
	}
	if resident != c.n || len(live) != c.n {
		t.Fatalf("k=%d: %d resident nodes, %d live records, n = %d", c.k, resident, len(live), c.n)
	}
}

// Entries whose bucket pair is full go to the stash, and the cache stays
// exact: fingerprints crafted to share a pair, mixed into random traces,
// against the reference request by request.
func TestLRUStashExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	stashed := 0
	for round := range 60 {
		k := []int{17, 24, 40, 64, 100}[round%5]
		c := NewLRU(k)
		evil := pairCollisions(&c.t, mix64(uint64(round)<<40), uint64(round)<<40+1, 16+r.IntN(k))
		var tr []uint64
		for range 3000 {
			if r.IntN(3) == 0 {
				tr = append(tr, evil[r.IntN(len(evil))])
			} else {
				tr = append(tr, mix64(uint64(r.IntN(3*k))))
			}
		}
		stashed = max(stashed, sameLRU(t, "pair collisions", c, tr))
	}
	if stashed == 0 {
		t.Fatal("no entry was ever stashed: the test does not reach the stash")
	}
}

// The stamps are 32-bit: near the wrap the live records are renumbered, and
// the cache stays exact.
func TestLRUStampWrap(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for name, tr := range reftest.Shapes(r) {
		for _, k := range testKs {
			c := NewLRU(k)
			c.base = math.MaxUint32 - uint32(len(c.ring)) - 50
			tr := append(append([]uint64(nil), tr...), tr...)
			sameLRU(t, name, c, tr)
			if k > 0 && len(tr) > 2*len(c.ring) && c.next() > math.MaxUint32/2 {
				t.Fatalf("%s k=%d: stamps not renumbered (next %d)", name, k, c.next())
			}
		}
	}
}

// Many random traces and sizes, request by request, with long runs of hits
// (the ring fills with dead records and is squeezed) and of misses.
func TestLRURandomExact(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	walks := uint64(0)
	for range 200 {
		k := r.IntN(80)
		universe := 1 + r.IntN(4*k+2)
		tr := make([]uint64, 2000)
		for i := range tr {
			switch {
			case i > 0 && r.IntN(4) == 0:
				tr[i] = tr[r.IntN(i)] // a repeat
			default:
				tr[i] = mix64(uint64(r.IntN(universe)))
			}
		}
		c := NewLRU(k)
		sameLRU(t, "random", c, tr)
		walks += c.t.walks
	}
	if walks == 0 {
		t.Fatal("no insert found both buckets full: the test does not reach the walk")
	}
}

func TestLRUBytesPerEntry(t *testing.T) {
	for _, k := range []int{1 << 10, 1 << 16} {
		c := NewLRU(k)
		for i := range 3 * k {
			c.Seen(mix64(uint64(i)))
		}
		if b := float64(c.Bytes()) / float64(k); b > 25 {
			t.Errorf("k=%d: %.1f bytes per entry, want ≤ 25", k, b)
		}
		if c.Len() != k {
			t.Errorf("k=%d: Len %d after 3k distinct requests", k, c.Len())
		}
	}
}
