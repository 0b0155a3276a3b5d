package cachesim

import (
	"fmt"
	"math"
)

// errTooManySizes: a level number must fit a byte.
var errTooManySizes = fmt.Errorf("%w: more than 255 cache sizes for one-pass MIN", ErrBadSimOptions)

// MIN for every cache size in one pass.
//
// MIN (Belady's OPT) is a stack algorithm (Mattson, Gecsei, Slutz & Traiger,
// "Evaluation techniques for storage hierarchies", IBM Systems Journal 1970):
// there is one stack order of all items such that, at every moment, the MIN
// cache of size k holds exactly the top k items of the stack. On a request
// for x the stack is updated as follows: x goes to the top; the item that was
// on top is carried down, and at each position above x's old one the carried
// item and the item there are compared, the one requested sooner stays and
// the other is carried on; the last carried item takes x's old position (or,
// when x was not in the stack, goes one below the bottom). The request hits a
// cache of size k iff x's old position was ≤ k.
//
// Walking the stack position by position costs O(depth) per request, far too
// much for 10⁸ requests and 2²⁵ entries. Only the positions between the
// simulated sizes k₁ < k₂ < … matter, though, and over a run of positions the
// compare-and-carry step leaves the set of items there unchanged except that
// the carried item joins it and the one requested last (farthest next use)
// among them leaves. So each level (k_{j−1}, k_j] is kept as a max-heap keyed
// by next use, and a level costs O(1) when the carried item is the farthest
// (it passes through) and O(log level size) when it is not (it replaces the
// top, which is carried on). A request found in level L touches levels 0…L;
// a request in no level (a miss at every simulated size) touches all of them.

// minStackMisses returns MIN's misses at every size of ks (sorted ascending,
// no duplicates) in one pass over ids, using next from nextUses. d is the
// number of distinct ids. It equals minMisses at every size.
func minStackMisses(ids, next []uint32, d int, ks []int, m *meter) ([]uint64, error) {
	n := len(ids)
	out := make([]uint64, len(ks))
	// Levels: the sizes 0 < k < d. Size 0 misses everything; a size ≥ d
	// never evicts, so it misses each id once.
	var bounds []int // cumulative sizes of the levels
	for i, k := range ks {
		switch {
		case k <= 0:
			out[i] = uint64(n)
		case k >= d:
			out[i] = uint64(d)
		default:
			bounds = append(bounds, k)
		}
	}
	nl := len(bounds)
	if nl == 0 {
		_ = m.tick(n)
		return out, m.ctx.Err()
	}
	if nl > 255 {
		return nil, errTooManySizes
	}
	if bounds[nl-1] > math.MaxInt32 {
		return nil, fmt.Errorf("%w: one-pass MIN holds at most 2^31−1 entries, not %d", ErrBadSimOptions, bounds[nl-1])
	}
	st := newMinStack(bounds, d)
	for t, x := range ids {
		st.request(x, uint64(next[t])<<32|uint64(x))
		if (t+1)%tickEvery == 0 {
			if err := m.tick(tickEvery); err != nil {
				return nil, err
			}
		}
	}
	if err := m.tick(n % tickEvery); err != nil {
		return nil, err
	}
	var sum uint64
	j := nl
	for i := len(ks) - 1; i >= 0; i-- {
		if ks[i] <= 0 || ks[i] >= d {
			continue
		}
		for ; j > 0 && bounds[j-1] >= ks[i]; j-- {
			sum += st.cnt[j]
		}
		out[i] = sum
	}
	return out, nil
}

// minStack is the OPT stack cut into levels, one max-heap each. Heap entries
// are next use << 32 | id: distinct ids never share a next use except
// "never", where the id breaks the tie.
type minStack struct {
	nl  int
	off []int32  // level j is h[off[j]:off[j+1]]
	sz  []int32  // entries held by each level
	h   []uint64 // the heaps
	pos []int32  // id → index into h, −1 when in no level
	lvl []uint8  // id → its level
	cnt []uint64 // requests found in level L (nl: in none)
}

func newMinStack(bounds []int, d int) *minStack {
	nl := len(bounds)
	st := &minStack{nl: nl, off: make([]int32, nl+1), sz: make([]int32, nl),
		h: make([]uint64, bounds[nl-1]), pos: make([]int32, d), lvl: make([]uint8, d), cnt: make([]uint64, nl+1)}
	for j, b := range bounds {
		st.off[j+1] = int32(b)
	}
	for i := range st.pos {
		st.pos[i] = -1
	}
	return st
}

// request moves x, whose heap entry is now e, to the top of the stack.
func (st *minStack) request(x uint32, e uint64) {
	p := st.pos[x]
	L := st.nl
	if p >= 0 {
		L = int(st.lvl[x])
	}
	st.cnt[L]++
	if L == 0 {
		// Already on top: its next use moved later, the key grew.
		st.up(0, p, e)
		return
	}
	carry := e
	for j := 0; j < st.nl; j++ {
		o := st.off[j]
		if j == L {
			// x's old place: the carried item takes it.
			st.lvl[uint32(carry)] = uint8(j)
			i := p - o
			if i > 0 && st.h[o+(i-1)/2] < carry {
				st.up(o, i, carry)
			} else {
				st.down(o, st.sz[j], i, carry)
			}
			return
		}
		s := st.sz[j]
		if s < st.off[j+1]-o {
			// Not full: this is the bottom of the stack.
			st.lvl[uint32(carry)] = uint8(j)
			st.sz[j] = s + 1
			st.up(o, s, carry)
			return
		}
		if j > 0 && carry >= st.h[o] {
			continue // the farthest: it passes through
		}
		top := st.h[o]
		st.lvl[uint32(carry)] = uint8(j)
		st.down(o, s, 0, carry)
		carry = top
	}
	st.pos[uint32(carry)] = -1 // fell below the largest size
}

// up sifts entry e up from index i of the heap at offset o.
func (st *minStack) up(o, i int32, e uint64) {
	h, pos := st.h, st.pos
	for i > 0 {
		p := (i - 1) / 2
		pe := h[o+p]
		if pe >= e {
			break
		}
		h[o+i] = pe
		pos[uint32(pe)] = o + i
		i = p
	}
	h[o+i] = e
	pos[uint32(e)] = o + i
}

// down sifts entry e down from index i of the heap of s entries at offset o.
func (st *minStack) down(o, s, i int32, e uint64) {
	h, pos := st.h, st.pos
	for {
		c := 2*i + 1
		if c >= s {
			break
		}
		ce := h[o+c]
		if c+1 < s {
			if c2 := h[o+c+1]; c2 > ce {
				c, ce = c+1, c2
			}
		}
		if ce <= e {
			break
		}
		h[o+i] = ce
		pos[uint32(ce)] = o + i
		i = c
	}
	h[o+i] = e
	pos[uint32(e)] = o + i
}
