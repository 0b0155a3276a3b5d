package cache

// LRU is an exact least-recently-used cache of fingerprints: a Robin Hood
// scatter table (at most half full) maps each fingerprint to its node in a doubly linked recency list kept in
// flat arrays (uint32 links, no pointers). Not safe for concurrent use.
type LRU struct {
	t          table    // fingerprint → node
	fps        []uint64 // node → fingerprint
	prev, next []uint32 // recency list; node k is the sentinel (next = MRU)
	k          int
	stats      Stats
}

// NewLRU returns an empty LRU cache of k ≥ 0 entries.
func NewLRU(k int) *LRU {
	if k < 0 {
		k = 0
	}
	c := &LRU{
		t:    newTable(2*k+1, false, true), // half full: short probes
		fps:  make([]uint64, k),
		prev: make([]uint32, k+1),
		next: make([]uint32, k+1),
		k:    k,
	}
	s := uint32(k)
	c.prev[s], c.next[s] = s, s
	return c
}

func (c *LRU) unlink(n uint32) {
	p, x := c.prev[n], c.next[n]
	c.next[p], c.prev[x] = x, p
}

func (c *LRU) pushFront(n uint32) {
	s := uint32(c.k)
	f := c.next[s]
	c.prev[n], c.next[n] = s, f
	c.prev[f], c.next[s] = n, n
}

// Seen implements Cache.
func (c *LRU) Seen(fp uint64) bool {
	fp = key(fp)
	if i := c.t.find(fp); i >= 0 {
		n := c.t.vals[i]
		if c.next[c.k] != n {
			c.unlink(n)
			c.pushFront(n)
		}
		c.stats.Hits++
		return true
	}
	c.stats.Misses++
	if c.k == 0 {
		return false
	}
	var n uint32
	if c.t.n < c.k {
		n = uint32(c.t.n)
	} else {
		n = c.prev[c.k] // least recently used
		c.unlink(n)
		c.t.remove(uint64(c.t.find(c.fps[n])))
	}
	c.fps[n] = fp
	c.t.insert(fp, n, false)
	c.pushFront(n)
	return false
}

// Len implements Cache.
func (c *LRU) Len() int { return c.t.n }

// Cap implements Cache.
func (c *LRU) Cap() int { return c.k }

// Stats implements Cache.
func (c *LRU) Stats() Stats { return c.stats }

// Bytes is the memory held by the table and the list.
func (c *LRU) Bytes() int { return c.t.bytes() + 8*len(c.fps) + 4*len(c.prev) + 4*len(c.next) }
