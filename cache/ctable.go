package cache

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// ctable is the scatter table behind CLOCK and RANDOM: open addressing over
// a flat array of fingerprints in buckets of 8 slots (one cache line: the
// slots' tag bytes, then their low 56 bits; see put), with the mark bits
// packed one per slot (one byte per bucket) and no pointers. A fingerprint
// lives in one of two buckets, chosen by two independent hashes of its
// bits, so a lookup reads at most two cache lines whatever the load. While
// the cache fills, a new fingerprint goes to the emptier of its two
// buckets; when both are full a resident is moved to its
// other bucket (cuckoo displacement), repeating along a random walk until a
// slot is free. Once the cache is full neither walks again: Random evicts
// within the new fingerprint's bucket pair and puts it in the victim's
// slot; Clock's global hand evicts anywhere, so the new fingerprint's
// buckets may both be full (~35% of its misses), and Clock then evicts
// within the pair (a walk there cost half of a miss's time).
//
// CLOCK's tables of occMinBuckets buckets or more also keep an occupancy
// bit per slot (one byte per bucket), and both byte arrays are padded by
// eight bytes: the hand then finds its victim, the first occupied unmarked
// slot of its row, among the next eight buckets with two word loads and no
// loop, and a miss tells whether its buckets are full from two bytes.
//
// Not linear probing: at the ~90% load that ≤ 9 bytes per entry needs, its
// inserts walk far; two-choice buckets of eight hold ~99% with short walks
// (figures: docs/bench/cache-history.md).
type ctable struct {
	bk    [][bucketBytes]byte // bucket b: tag bytes 0–7 (0 = empty slot), then the slots' low 56 bits, 7 bytes each
	marks []uint8             // one bit per slot: marks[b] holds bucket b's eight
	nb    uint64              // buckets
	n     int
	rng   uint64  // for the displacement walk
	walks uint64  // inserts that found both buckets full
	drops uint64  // entries lost by a walk that found no free slot
	occ   []uint8 // CLOCK's, from occMinBuckets: one bit per slot, set iff occupied (padded as marks)
}

const (
	bucketSlots = 8
	bucketBytes = 64 // one cache line
	maxWalk     = 500
	walkSeed    = 0x2545f4914f6cdd1d // the displacement walk's first random state
)

// clockBuckets is the number of buckets of a CLOCK table of k entries, and
// whether it has occupancy bits: as many buckets as 8.85 bytes per entry
// pay for (8 per slot, 1/8 per mark bit and 1/8 per occupancy bit, so 66
// bytes per bucket, + 8 bytes of padding: ~7.3% spare slots; 0.15 byte is
// left for the allocator's page rounding, so that the heap-measured cost
// stays ≤ 9 from k = 2^16). Tables of fewer than occMinBuckets have no
// occupancy bits (65 bytes per bucket, ~8.9% spare; every miss takes
// Clock's slow path), and at least 6% + 8 spare slots so that small tables
// are never nearly full: at k = 256, 66 bytes per bucket would leave 16
// spare slots instead of 24 (or exceed 9 bytes per entry). CLOCK's global
// hand frees a slot anywhere in the table, so a new entry finds a free slot
// in its own buckets only thanks to the spare slots; the misses that find
// both full (~35% of a stream of new fingerprints at k ≥ 2^10, 22% at
// k = 256) evict within the pair.
func clockBuckets(k int) (nb int, occ bool) {
	nb = (885*k/100 - 8) / 65
	if min := (k + k/16 + 8 + bucketSlots - 1) / bucketSlots; nb < min {
		nb = min
	}
	if n := (885*k/100 - 8 - 8) / 66; n >= occMinBuckets {
		return n, true
	}
	return nb, false
}

// occMinBuckets is the size from which CLOCK tables have occupancy bits.
const occMinBuckets = 64

// randomBuckets is the number of buckets of a RANDOM table of k entries: 2%
// + 8 spare slots (~8.29 bytes per entry). Once full, RANDOM evicts within
// the new fingerprint's bucket pair, so the spare slots only have to make
// the table fillable: at 98% load ~4% of the inserts walk, a few steps
// each, and none is dropped (TestCtableFill). The fewer the spare slots,
// the fewer the misses whose random draw lands on an empty slot (the slow
// path).
func randomBuckets(k int) int {
	return (k + k/50 + 8 + bucketSlots - 1) / bucketSlots
}

// withOcc adds the occupancy bits (CLOCK's) and pads marks and occ with
// eight bytes of empty buckets, so that the bytes of the eight buckets from
// any bucket on are one word.
func (t *ctable) withOcc() {
	n := len(t.marks) + 8
	t.marks = make([]uint8, n)
	t.occ = make([]uint8, n)
}

func newCtable(nb int) ctable {
	return ctable{bk: make([][bucketBytes]byte, nb), marks: make([]uint8, nb), nb: uint64(nb), rng: walkSeed}
}

// b1 and b2 are the two buckets of fp, scaled to the table by a
// multiply-shift (no division): with h = (fp ⊕ fp≫32)·φ, b1 is the high
// word of h·nb and b2 the high word of (the low word of h·nb)·nb, that is,
// the next base-nb digit of h/2⁶⁴ after b1. The compiler computes h·nb once
// for both, so b2 costs one multiply. Real fingerprints are hashes already;
// the fold and φ are for structured keys (small integers, progressions),
// which must fill the table as well as random keys do (TestCtableFill).
func (t *ctable) b1(fp uint64) uint64 {
	b, _ := bits.Mul64((fp^fp>>32)*0x9e3779b97f4a7c15, t.nb)
	return b
}

func (t *ctable) b2(fp uint64) uint64 {
	_, lo := bits.Mul64((fp^fp>>32)*0x9e3779b97f4a7c15, t.nb)
	b, _ := bits.Mul64(lo, t.nb)
	return b
}

func (t *ctable) buckets(fp uint64) (uint64, uint64) { return t.b1(fp), t.b2(fp) }

// A bucket is one cache line: the eight slots' tag bytes (a stored
// fingerprint's top byte, never 0; 0 marks an empty slot), then each slot's
// low 56 bits in seven bytes (slot j at bytes 8+7j … 14+7j). A lookup
// compares the eight tags at once in a word (SWAR) and reads the low bits
// of a slot only where its tag matches, instead of sixteen 64-bit compares
// for two buckets of whole fingerprints. Key gives every fingerprint a
// non-zero top byte.

const (
	low7    = 0x7f7f7f7f7f7f7f7f
	remMask = 1<<56 - 1
)

// zeroBytes returns a word with bit 8j+7 set iff byte j of x is 0, exactly
// (no false positives above a zero byte, unlike the borrow form).
func zeroBytes(x uint64) uint64 { return ^((x&low7 + low7) | x | low7) }

// slotBits turns zeroBytes' form (bit 8j+7 per slot) into bit j per slot.
func slotBits(z uint64) uint { return uint((z >> 7) * 0x0102040810204080 >> 56) }

// tagWord returns the eight tag bytes of bucket k as a word (byte j = slot j).
func tagWord(k *[bucketBytes]byte) uint64 { return binary.LittleEndian.Uint64(k[:8]) }

// lowBits returns the low 56 bits stored in slot j (< 8) of bucket k.
func lowBits(k *[bucketBytes]byte, j uint64) uint64 {
	return binary.LittleEndian.Uint64(k[7+7*(j&7):]) >> 8
}

// matchIn returns the slot of bucket k holding the fingerprint whose low 56
// bits are r, among the slots whose bit 8j+7 is set in m (its tag matched),
// or -1 (at once when m is 0, as on most misses).
func matchIn(k *[bucketBytes]byte, m, r uint64) int {
	for ; m != 0; m &= m - 1 {
		j := uint64(bits.TrailingZeros64(m)) >> 3
		if lowBits(k, j) == r {
			return int(j)
		}
	}
	return -1
}

// put stores fp, which Key made, in slot j of bucket b.
func (t *ctable) put(b, j, fp uint64) { putIn(&t.bk[b], j, fp) }

// putIn stores fp, which Key made, in slot j of bucket k.
func putIn(k *[bucketBytes]byte, j, fp uint64) {
	j &= 7
	p := (*[8]byte)(k[7+7*j:])
	binary.LittleEndian.PutUint64(p[:], binary.LittleEndian.Uint64(p[:])&0xff|fp<<8)
	k[j] = byte(fp >> 56)
}

// rawTable addresses a table's arrays without bounds checks, for
// Clock.Seen's full-cache miss, where the checks and the slice lengths
// kept in registers pushed other values to the stack. The caller must keep every index in
// range: a bucket b < nb, and a window of the eight mark or occupancy bytes
// from a bucket < nb (withOcc's eight bytes of padding hold the last ones).
type rawTable struct{ bkp, marksp, occp unsafe.Pointer }

// raw returns t's arrays for rawTable. Without occupancy bits occp is nil:
// occ and occ8 are for the full cache's fast path, which needs them.
func (t *ctable) raw() rawTable {
	return rawTable{
		bkp:    unsafe.Pointer(unsafe.SliceData(t.bk)),
		marksp: unsafe.Pointer(unsafe.SliceData(t.marks)),
		occp:   unsafe.Pointer(unsafe.SliceData(t.occ)),
	}
}

// bucket returns bucket b (< nb).
func (r rawTable) bucket(b uint64) *[bucketBytes]byte {
	return (*[bucketBytes]byte)(unsafe.Add(r.bkp, b*bucketBytes))
}

// mark and occ return bucket b's (< nb) mark and occupancy bytes.
func (r rawTable) mark(b uint64) *uint8 { return (*uint8)(unsafe.Add(r.marksp, b)) }
func (r rawTable) occ(b uint64) *uint8  { return (*uint8)(unsafe.Add(r.occp, b)) }

// marks8 and occ8 return the mark and occupancy bytes of the eight buckets
// from b (< nb; those past the last bucket are padding).
func (r rawTable) marks8(b uint64) []byte { return (*[8]byte)(unsafe.Add(r.marksp, b))[:] }
func (r rawTable) occ8(b uint64) []byte   { return (*[8]byte)(unsafe.Add(r.occp, b))[:] }

// slot returns the fingerprint in slot i, 0 if it is empty; setSlot stores v
// there (0 empties it).
func (t *ctable) slot(i uint64) uint64 {
	k := &t.bk[i/bucketSlots]
	j := i % bucketSlots
	if k[j] == 0 {
		return 0
	}
	return uint64(k[j])<<56 | lowBits(k, j)
}

func (t *ctable) setSlot(i uint64, v uint64) {
	if v == 0 {
		t.bk[i/bucketSlots][i%bucketSlots] = 0
		return
	}
	t.put(i/bucketSlots, i%bucketSlots, v)
}

// lookIn returns the slot of bucket b holding fp, or -1.
func (t *ctable) lookIn(b, fp uint64) int {
	k := &t.bk[b]
	return matchIn(k, zeroBytes(tagWord(k)^fp>>56*lanes), fp&remMask)
}

// empties returns bucket b's empty slots, bit j for slot j.
func (t *ctable) empties(b uint64) uint { return slotBits(zeroBytes(tagWord(&t.bk[b]))) }

// find returns the slot holding fp, or -1: the first bucket, then the second.
func (t *ctable) find(fp uint64) int {
	b := t.b1(fp)
	if j := t.lookIn(b, fp); j >= 0 {
		return int(b*bucketSlots) + j
	}
	b = t.b2(fp)
	if j := t.lookIn(b, fp); j >= 0 {
		return int(b*bucketSlots) + j
	}
	return -1
}

// used reports whether slot i holds a fingerprint.
func (t *ctable) used(i uint64) bool { return t.bk[i/bucketSlots][i%bucketSlots] != 0 }

func (t *ctable) mark(i uint64) bool { return t.marks[i>>3]&(1<<(i&7)) != 0 }
func (t *ctable) setMark(i uint64)   { t.marks[i>>3] |= 1 << (i & 7) }
func (t *ctable) clearMark(i uint64) { t.marks[i>>3] &^= 1 << (i & 7) }

func (t *ctable) putMark(i uint64, on bool) {
	if on {
		t.setMark(i)
	} else {
		t.clearMark(i)
	}
}

// free returns an empty slot of bucket b, or -1.
func (t *ctable) free(b uint64) int {
	if m := t.empties(b); m != 0 {
		return int(b*bucketSlots) + bits.TrailingZeros(m)
	}
	return -1
}

func (t *ctable) place(i uint64, fp uint64, mark bool) {
	t.setSlot(i, fp)
	t.putMark(i, mark)
	if t.occ != nil {
		t.occ[i>>3] |= 1 << (i & 7)
	}
	t.n++
}

// insert adds fp, which must be absent and non-zero, to the emptier of its
// buckets (the first on a tie). If the displacement walk finds no free slot
// the entry it holds last is dropped (counted in drops): for a cache that is
// an early eviction, not an error.
func (t *ctable) insert(fp uint64, mark bool) {
	t.insertIn(fp, mark, t.b1(fp), t.b2(fp))
}

// insertIn is insert with fp's buckets already computed.
func (t *ctable) insertIn(fp uint64, mark bool, b1, b2 uint64) {
	e1 := t.empties(b1)
	e2 := t.empties(b2)
	if e1 == 0 && e2 == 0 {
		t.walk(fp, mark, b1, b2)
		return
	}
	b, j := emptier(b1, b2, uint64(e1), uint64(e2))
	t.place(b*bucketSlots+j, fp, mark)
}

// emptier returns which of buckets b1 and b2 has more free slots (b1 on a
// tie) and its first free slot, from their free-slot bytes e1 and e2 (bit j
// set iff slot j is free; not both 0). It has no branch: which bucket wins
// is a coin toss, which a branch would mispredict every other time.
func emptier(b1, b2, e1, e2 uint64) (b, j uint64) {
	sel := ltMask(uint64(bits.OnesCount8(uint8(e1))), uint64(bits.OnesCount8(uint8(e2))))
	return b1 ^ (b1^b2)&sel, uint64(bits.TrailingZeros8(uint8(e1^(e1^e2)&sel))) % bucketSlots
}

// walk inserts fp, whose buckets b1 and b2 are full, by a cuckoo walk
// (see cuckoo), each moved entry keeping its mark.
func (t *ctable) walk(fp uint64, mark bool, b1, b2 uint64) {
	i, fp, mark, ok := cuckoo(t, fp, mark, b1, b2, func(i uint64, m bool) bool {
		old := t.mark(i)
		t.putMark(i, m)
		return old
	})
	if !ok {
		t.drops++
		return
	}
	t.place(i, fp, mark)
}

// cuckoo makes room for fp, whose buckets b1 and b2 are both full, by a
// random walk: fp takes a random slot of one of its buckets, the resident
// it displaces takes a random slot of its other bucket, and so on until a
// bucket has room. Each entry carries a payload (CLOCK's mark, LRU's
// stamp): swap(i, v) gives slot i the payload v and returns the one it
// had. cuckoo returns a free slot i and the entry in hand, which the caller
// puts there; or, after maxWalk moves, ok false and the entry in hand, which
// has no slot.
func cuckoo[V any](t *ctable, fp uint64, v V, b1, b2 uint64, swap func(i uint64, v V) V) (i, hand uint64, hv V, ok bool) {
	t.walks++
	r := splitmix64(&t.rng)
	b := b1
	if r&1 == 0 {
		b = b2
	}
	for range maxWalk {
		i := b*bucketSlots + (r>>1)%bucketSlots
		old := t.slot(i)
		t.setSlot(i, fp)
		fp, v = old, swap(i, v)
		alt := t.b1(fp)
		if alt == b {
			alt = t.b2(fp)
		}
		if j := t.free(alt); j >= 0 {
			return uint64(j), fp, v, true
		}
		b = alt
		r = splitmix64(&t.rng)
	}
	return 0, fp, v, false
}

// remove empties slot i.
func (t *ctable) remove(i uint64) {
	t.setSlot(i, 0)
	t.clearMark(i)
	if t.occ != nil {
		t.occ[i>>3] &^= 1 << (i & 7)
	}
	t.n--
}

// m is the number of slots.
func (t *ctable) m() uint64 { return uint64(len(t.bk)) * bucketSlots }

func (t *ctable) bytes() int { return bucketBytes*len(t.bk) + len(t.marks) + len(t.occ) }

// A bucket pair is a fingerprint's two buckets seen as one set of 16 slots:
// bits 0–7 of a pair mask are bucket b1's slots, bits 8–15 bucket b2's.

// pairOcc returns the occupied slots of the pair (b1, b2); when b1 == b2
// the bucket is counted once, as the low half.
func (t *ctable) pairOcc(b1, b2 uint64) uint16 {
	o := uint16(^t.empties(b1)&0xff) | uint16(^t.empties(b2)&0xff)<<8
	if b1 == b2 {
		o &= 0xff
	}
	return o
}

// pairBucket is the bucket that holds slot j (0–15) of the pair (b1, b2),
// chosen without a branch (j is as likely below 8 as not, so a branch
// would mispredict on every other miss).
func pairBucket(b1, b2 uint64, j int) uint64 {
	return b1 ^ (b1^b2)&-(uint64(j)>>3)
}

// pairSlot is the table index of slot j (0–15) of the pair (b1, b2).
func pairSlot(b1, b2 uint64, j int) uint64 {
	return pairBucket(b1, b2, j)*bucketSlots + uint64(j&(bucketSlots-1))
}

// firstFrom returns the first set bit of m (non-zero) at or after bit h,
// cyclically.
func firstFrom(m uint16, h int) int {
	return (h + bits.TrailingZeros16(bits.RotateLeft16(m, -h))) & 15
}
