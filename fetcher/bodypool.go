package fetcher

import (
	"math/bits"
	"sync"
)

// Body buffers. A RewindBuffer's in-memory body comes from bodies and goes
// back there at Close (or when it spills to disk), so that a crawl's
// fetches reuse a few buffers instead of allocating one per page. The pool
// holds buffers in power-of-two size classes from 4 KiB to 256 KiB (the
// default MemThreshold); larger ones are never kept, and the free buffers
// it keeps total at most poolMaxHeld bytes: a burst of large pages leaves
// at most that much behind. Safe for concurrent use.
const (
	poolMinShift = 12 // 4 KiB
	poolMaxShift = 18 // 256 KiB
	poolMaxHeld  = 6 << 20
)

type bodyPool struct {
	mu   sync.Mutex
	free [poolMaxShift - poolMinShift + 1][][]byte
	held int // bytes in free
	max  int
}

var bodies = &bodyPool{max: poolMaxHeld}

// class returns the size class of a buffer of at least n bytes, or -1 if
// it is too large to pool.
func poolClass(n int) int {
	if n <= 1<<poolMinShift {
		return 0
	}
	s := bits.Len(uint(n - 1)) // 1<<s >= n
	if s > poolMaxShift {
		return -1
	}
	return s - poolMinShift
}

// get returns an empty buffer of capacity at least n.
func (p *bodyPool) get(n int) []byte {
	c := poolClass(n)
	if c < 0 {
		return make([]byte, 0, n)
	}
	p.mu.Lock()
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[c] = l[:len(l)-1]
		p.held -= cap(b)
		p.mu.Unlock()
		return b[:0]
	}
	p.mu.Unlock()
	return make([]byte, 0, 1<<(c+poolMinShift))
}

// put gives b back, unless its capacity is not a size class or the pool
// holds enough already. The caller must not use b afterwards.
func (p *bodyPool) put(b []byte) {
	c := poolClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+poolMinShift) {
		return
	}
	p.mu.Lock()
	if p.held+cap(b) <= p.max {
		p.free[c] = append(p.free[c], b[:0])
		p.held += cap(b)
	}
	p.mu.Unlock()
}

// heldBytes is what the free buffers total (tests).
func (p *bodyPool) heldBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}
