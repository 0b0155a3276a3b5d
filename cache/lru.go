package cache

import "math"

// LRU is an exact least-recently-used cache of fingerprints. Not safe for
// concurrent use.
//
// Its index is CLOCK's two-choice scatter table (ctable.go), 3/4 full when
// the cache is: k/0.75 slots in buckets of eight, so a lookup reads one or
// two cache lines, and a slot is the entry's node, without a pointer from
// the index to a list. Recency is a log rather than a linked list: every
// touch (an insert or a hit) stamps its node (last) with the next stamp and
// appends the node to a ring. Stamps are handed out in ring order, so a
// record's stamp is not stored: it is the head record's stamp (base) plus
// the record's distance from the head. A record is live while its stamp is
// still its node's; the live records, read from the ring's head, are the
// residents from least to most recently used, so an eviction pops records
// until a live one and empties that node. A hit is then a bucket read, a
// store and an append to the ring, where a linked list's move to front
// writes four nodes scattered over memory. When the ring is full its dead
// records are squeezed out and the live ones renumbered 1, 2, … (their
// stamps must stay consecutive): at most k are live, so that is a pass
// over 2k records every ≥ k touches.
//
// A new fingerprint whose two buckets are both full (1% of the misses at
// 3/4 load) is placed by a cuckoo walk (see walk): a moved entry keeps its
// stamp, and the stamp locates its live record, which is renamed. Only if
// the walk finds no room, as when crafted fingerprints share a bucket
// pair, does the entry go to a stash (a map) whose nodes follow the
// table's; it holds at most k entries, so such fingerprints cost map
// lookups, not memory.
//
// 24 bytes per entry: 10.7 for the table, 5.3 for the stamps, 8 for the
// ring. The table is 3/4 full, not half, so that LRU's arrays fit in the L3
// caches that hold CLOCK's at the sizes the crawl uses
// (docs/bench/cache-history.md).
type LRU struct {
	t     ctable   // fingerprint → node (its slot)
	last  []uint32 // node → stamp of its latest touch; 0 when empty
	ring  []uint32 // nodes touched, in stamp order: rn records from head, circularly
	head  int
	rn    int
	base  uint32 // the stamp of the record at head; record r's is base + r
	m     uint32 // table slots; nodes ≥ m are the stash's
	n     int    // residents
	k     int
	stash lruStash
	stats Stats
}

// lruStash holds the entries whose bucket pair was full.
type lruStash struct {
	node map[uint64]uint32 // fingerprint → node
	fps  []uint64          // node − m → fingerprint
	free []uint32          // nodes of removed entries, for reuse
}

// MaxLRU is the largest k NewLRU accepts: nodes and stamps are 32-bit.
const MaxLRU = 1 << 30

// NewLRU returns an empty LRU cache of k entries, 0 ≤ k ≤ MaxLRU (k is
// clamped to that range).
func NewLRU(k int) *LRU {
	k = min(max(k, 0), MaxLRU)
	nb := lruBuckets(k)
	m := nb * bucketSlots
	return &LRU{
		t:    ctable{bk: make([][bucketBytes]byte, nb), nb: uint64(nb), rng: walkSeed},
		last: make([]uint32, m),
		ring: make([]uint32, 2*k+16),
		base: 1,
		m:    uint32(m),
		k:    k,
	}
}

// Seen implements Cache.
//
// The two bucket lookups are written out, as in Clock.Seen and Random.Seen,
// and both buckets' tag words are loaded before the first is tested, so
// the second line is on its way while the first is compared (hits were
// faster; CLOCK and RANDOM gained nothing from the same change). Figures:
// docs/bench/cache-history.md.
func (c *LRU) Seen(fp uint64) bool {
	fp = Key(fp)
	t := &c.t
	tag, lo := fp>>56*lanes, fp&remMask
	b1, b2 := t.b1(fp), t.b2(fp)
	k1, k2 := &t.bk[b1], &t.bk[b2]
	w1, w2 := tagWord(k1), tagWord(k2)
	if j := matchIn(k1, zeroBytes(w1^tag), lo); j >= 0 {
		c.touch(uint32(b1)*bucketSlots + uint32(j))
		c.stats.Hits++
		return true
	}
	if j := matchIn(k2, zeroBytes(w2^tag), lo); j >= 0 {
		c.touch(uint32(b2)*bucketSlots + uint32(j))
		c.stats.Hits++
		return true
	}
	if len(c.stash.node) != 0 {
		if s, ok := c.stash.node[fp]; ok {
			c.touch(s)
			c.stats.Hits++
			return true
		}
	}
	c.stats.Misses++
	if c.k == 0 {
		return false
	}
	if c.n == c.k {
		c.evict()
	}
	c.n++
	// The emptier bucket (b1 on a tie).
	e1, e2 := uint64(t.empties(b1)), uint64(t.empties(b2))
	if e1|e2 == 0 {
		c.walk(fp, b1, b2)
		return false
	}
	b, j := emptier(b1, b2, e1, e2)
	t.put(b, j, fp)
	c.touch(uint32(b*bucketSlots + j))
	return false
}

// touch makes node s the most recently used.
func (c *LRU) touch(s uint32) {
	stamp := c.push(s)
	c.last[s] = stamp
}

// push appends a record of node s to the ring, squeezing it first if it is
// full or the stamps would wrap, and returns the record's stamp.
func (c *LRU) push(s uint32) uint32 {
	if c.rn == len(c.ring) || c.next() == math.MaxUint32 {
		c.squeeze()
	}
	stamp := c.next()
	c.ring[c.at(c.rn)] = s
	c.rn++
	return stamp
}

// lruLoadPct is the table's load, in percent, when the cache is full. At
// 80% the walks took 3.8% of the misses and a miss at k = 2^16 cost 1.1×;
// at half load a lookup at k = 2^20 cost 1.4–2.1× (docs/bench/cache.md).
const lruLoadPct = 75

// lruBuckets is the number of buckets of an LRU table of k entries, with at
// least k/16 + 8 spare slots.
func lruBuckets(k int) int {
	nb := (k*100/lruLoadPct + bucketSlots - 1) / bucketSlots
	return max(nb, (k+k/16+8+bucketSlots-1)/bucketSlots)
}

// walk inserts fp, whose buckets b1 and b2 are both full, as the most
// recently used entry, by a cuckoo walk (ctable's cuckoo). A moved
// resident keeps its stamp, and its live record, found from that stamp, is
// pointed at its new node. If no bucket has room after maxWalk moves, the
// entry in hand goes to the stash. Fingerprints crafted to share one
// bucket pair thus cost a failed walk each, ≤ 5.5 µs, once, then stash
// hits: 600 of them at k = 1024, requested 20 times each, cost 274 ns per
// request on average, and 14–15 ns once all were stashed
// (BenchmarkLRUPairCollisions).
func (c *LRU) walk(fp, b1, b2 uint64) {
	stamp := c.push(0) // fp's record; move names its node
	i, fp, stamp, ok := cuckoo(&c.t, fp, stamp, b1, b2, func(i uint64, st uint32) uint32 {
		old := c.last[i]
		c.move(uint32(i), st)
		return old
	})
	if ok {
		c.t.setSlot(i, fp)
		c.move(uint32(i), stamp)
		return
	}
	c.move(c.stash.put(fp, c), stamp)
}

// move gives node s the entry stamped stamp, whose live record then names
// s.
func (c *LRU) move(s, stamp uint32) {
	c.last[s] = stamp
	c.ring[c.at(int(stamp-c.base))] = s
}

// next is the stamp of the next touch. base + rn never exceeds 2³² − 1:
// touch squeezes before it would, and a pop moves one from rn to base.
func (c *LRU) next() uint32 { return c.base + uint32(c.rn) }

// at is the ring index of the r-th record from the head.
func (c *LRU) at(r int) int {
	i := c.head + r
	if i >= len(c.ring) {
		i -= len(c.ring)
	}
	return i
}

// squeeze drops the dead records from the ring, keeping the live ones in
// order, and renumbers the live ones 1, 2, … (at most k of 2³² stamps).
// Renumbering a node as its record is kept cannot disturb a later record's
// check: a node's live record is its last one.
func (c *LRU) squeeze() {
	w := 0
	for r := range c.rn {
		if node := c.ring[c.at(r)]; c.last[node] == c.base+uint32(r) {
			c.ring[c.at(w)] = node
			w++
			c.last[node] = uint32(w)
		}
	}
	c.rn, c.base = w, 1
}

// evict removes the least recently used entry; the cache must not be
// empty.
func (c *LRU) evict() {
	for {
		s, stamp := c.ring[c.head], c.base
		if c.head++; c.head == len(c.ring) {
			c.head = 0
		}
		c.rn--
		c.base++
		if c.last[s] != stamp {
			continue // touched again since, or evicted
		}
		c.last[s] = 0
		if s < c.m {
			c.t.bk[s/bucketSlots][s%bucketSlots] = 0
		} else {
			c.stash.remove(s, c)
		}
		c.n--
		return
	}
}

// put stashes fp and returns its node.
func (s *lruStash) put(fp uint64, c *LRU) uint32 {
	if s.node == nil {
		s.node = make(map[uint64]uint32)
	}
	var n uint32
	if l := len(s.free); l > 0 {
		n, s.free = s.free[l-1], s.free[:l-1]
		s.fps[n-c.m] = fp
	} else {
		n = c.m + uint32(len(s.fps))
		s.fps = append(s.fps, fp)
		c.last = append(c.last, 0)
	}
	s.node[fp] = n
	return n
}

// remove drops node n from the stash.
func (s *lruStash) remove(n uint32, c *LRU) {
	delete(s.node, s.fps[n-c.m])
	s.fps[n-c.m] = 0
	s.free = append(s.free, n)
}

// Len implements Cache.
func (c *LRU) Len() int { return c.n }

// Cap implements Cache.
func (c *LRU) Cap() int { return c.k }

// Stats implements Cache.
func (c *LRU) Stats() Stats { return c.stats }

// Bytes is the memory held by the table, the stamps, the ring and the stash
// (a map entry counted as 24 bytes).
func (c *LRU) Bytes() int {
	return c.t.bytes() + 4*cap(c.last) + 4*len(c.ring) +
		24*len(c.stash.node) + 8*cap(c.stash.fps) + 4*cap(c.stash.free)
}
