package cachesim

import "math/bits"

// table is a Robin Hood scatter table of non-zero fingerprints: open
// addressing with linear probing that wraps around the end of slots (circular
// chains). Each fingerprint's home slot is the high bits of fp·φ scaled to
// the table (see home), so a chain holds fingerprints in ascending home order, a search
// stops as soon as it meets an entry closer to its home than the probe is, and
// a removal shifts the rest of the chain back (no tombstones). Optional
// parallel arrays: marks (one bit per slot) and vals (a uint32 per slot) move
// with their fingerprints. The table must never be full: n < m always.
type table struct {
	slots []uint64 // 0 = empty
	marks []uint64 // packed bits, one per slot; nil when unused
	vals  []uint32 // payload per slot; nil when unused
	m     uint64
	n     int
}

func newTable(m int, marks, vals bool) table {
	t := table{slots: make([]uint64, m), m: uint64(m)}
	if marks {
		t.marks = make([]uint64, (m+63)/64)
	}
	if vals {
		t.vals = make([]uint32, m)
	}
	return t
}

// slotsFor is the table size for k entries: about 8% spare (≤ 9 bytes per
// entry with the mark bits from k = 100 on), never full.
func slotsFor(k int) int { return k + k/12 + 1 }

// home is fp's home slot: the top of fp·φ scaled to m slots. Scaling fp's own
// top bits instead spread fingerprints unevenly: key() stores those whose top
// byte is 0 with bit 56 set, so 1/256 of the table got twice the load. An
// LRU cache, half full overall, then had runs up to 280 slots long there,
// and a miss at k = 2^25 cost 2.0 µs (a 2^22 one 0.5–0.8 µs, and growing
// with churn, against 0.22 µs now). Structured keys (small integers) piled
// up at slot 0.
func (t *table) home(fp uint64) uint64 {
	h, _ := bits.Mul64(fp*0x9e3779b97f4a7c15, t.m)
	return h
}

// dist is how far slot i is from the home of fp.
func (t *table) dist(i, fp uint64) uint64 {
	h := t.home(fp)
	if i >= h {
		return i - h
	}
	return i + t.m - h
}

// find returns the slot holding fp, or -1.
func (t *table) find(fp uint64) int {
	i := t.home(fp)
	for d := uint64(0); ; d++ {
		s := t.slots[i]
		if s == fp {
			return int(i)
		}
		if s == 0 || t.dist(i, s) < d {
			return -1
		}
		if i++; i == t.m {
			i = 0
		}
	}
}

func (t *table) mark(i uint64) bool { return t.marks[i>>6]&(1<<(i&63)) != 0 }
func (t *table) setMark(i uint64)   { t.marks[i>>6] |= 1 << (i & 63) }
func (t *table) clearMark(i uint64) { t.marks[i>>6] &^= 1 << (i & 63) }

func (t *table) putMark(i uint64, on bool) {
	if on {
		t.setMark(i)
	} else {
		t.clearMark(i)
	}
}

// insert adds fp, which must be absent and non-zero, with payload val and
// mark bit mark. It returns the slot fp landed in.
func (t *table) insert(fp uint64, val uint32, mark bool) uint64 {
	i := t.home(fp)
	d := uint64(0)
	at := ^uint64(0)
	for {
		s := t.slots[i]
		if s == 0 {
			t.slots[i] = fp
			if t.vals != nil {
				t.vals[i] = val
			}
			if t.marks != nil {
				t.putMark(i, mark)
			}
			t.n++
			if at == ^uint64(0) {
				at = i
			}
			return at
		}
		if sd := t.dist(i, s); sd < d {
			// Rob the richer entry: fp takes slot i, the old entry moves on.
			t.slots[i], fp = fp, s
			if t.vals != nil {
				t.vals[i], val = val, t.vals[i]
			}
			if t.marks != nil {
				old := t.mark(i)
				t.putMark(i, mark)
				mark = old
			}
			if at == ^uint64(0) {
				at = i
			}
			d = sd
		}
		if i++; i == t.m {
			i = 0
		}
		d++
	}
}

// remove empties slot i (which must be full) and shifts the rest of its chain
// back by one slot.
func (t *table) remove(i uint64) {
	for {
		j := i + 1
		if j == t.m {
			j = 0
		}
		s := t.slots[j]
		if s == 0 || t.home(s) == j {
			break
		}
		t.slots[i] = s
		if t.vals != nil {
			t.vals[i] = t.vals[j]
		}
		if t.marks != nil {
			t.putMark(i, t.mark(j))
		}
		i = j
	}
	t.slots[i] = 0
	if t.marks != nil {
		t.clearMark(i)
	}
	t.n--
}

// bytes is the memory the table holds.
func (t *table) bytes() int { return 8*len(t.slots) + 8*len(t.marks) + 4*len(t.vals) }
