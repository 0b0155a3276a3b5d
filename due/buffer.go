package due

import "math/bits"

// buffer is the in-memory set of buffered fingerprints: an arrival-ordered
// array plus an open-addressing table of indexes into it (linear probing,
// load ≤ 1/2), about 16 bytes per entry. The URLs are not held in memory:
// they are in the log, which is read back in arrival order at merge time.
type buffer struct {
	fps   []uint64
	slots []uint32 // index+1; 0 is empty
	shift uint
}

func newBuffer(hint int) *buffer {
	b := &buffer{}
	b.init(max(16, hint))
	return b
}

func (b *buffer) init(n int) {
	size := 1 << bits.Len(uint(2*n-1)) // ≥ 2n
	b.slots = make([]uint32, size)
	b.shift = uint(64 - bits.TrailingZeros(uint(size)))
	if b.fps == nil {
		b.fps = make([]uint64, 0, n)
	}
}

func (b *buffer) len() int { return len(b.fps) }

// reset empties the buffer and keeps its memory, so that a merged buffer
// becomes the next active one instead of a fresh allocation: at the default
// 2^20 entries a new buffer is 16 MiB to allocate and zero, and a narrow
// crawl merges many times a second (frontier kicks) a few URLs at a time.
// A sparse table is emptied by walking each entry's probe run from its home
// slot to the first empty one (every slot of a run lies after the home of
// the entry in the run's first slot, so the runs end up zeroed whole);
// a dense one is cleared at once.
func (b *buffer) reset() {
	if 8*len(b.fps) >= len(b.slots) {
		clear(b.slots)
	} else {
		mask := uint64(len(b.slots) - 1)
		for _, fp := range b.fps {
			for i := b.slot(fp); b.slots[i] != 0; i = (i + 1) & mask {
				b.slots[i] = 0
			}
		}
	}
	b.fps = b.fps[:0]
}

func (b *buffer) slot(fp uint64) uint64 { return (fp * 0x9E3779B97F4A7C15) >> b.shift }

// lookup returns the arrival index of fp, or -1.
func (b *buffer) lookup(fp uint64) int {
	mask := uint64(len(b.slots) - 1)
	for i := b.slot(fp); ; i = (i + 1) & mask {
		s := b.slots[i]
		if s == 0 {
			return -1
		}
		if b.fps[s-1] == fp {
			return int(s - 1)
		}
	}
}

// insert adds fp unless present; it reports whether it was added.
func (b *buffer) insert(fp uint64) bool {
	if 2*(len(b.fps)+1) > len(b.slots) {
		b.grow()
	}
	mask := uint64(len(b.slots) - 1)
	for i := b.slot(fp); ; i = (i + 1) & mask {
		s := b.slots[i]
		if s == 0 {
			b.fps = append(b.fps, fp)
			b.slots[i] = uint32(len(b.fps))
			return true
		}
		if b.fps[s-1] == fp {
			return false
		}
	}
}

func (b *buffer) grow() {
	b.init(len(b.slots))
	mask := uint64(len(b.slots) - 1)
	for idx, fp := range b.fps {
		i := b.slot(fp)
		for b.slots[i] != 0 {
			i = (i + 1) & mask
		}
		b.slots[i] = uint32(idx + 1)
	}
}

// memBytes is the memory the buffer holds.
func (b *buffer) memBytes() int64 { return int64(cap(b.fps))*8 + int64(len(b.slots))*4 }
