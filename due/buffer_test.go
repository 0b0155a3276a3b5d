package due

import (
	"math/rand/v2"
	"testing"
)

// reset leaves an empty table whatever the fill (sparse: probe runs walked;
// dense: cleared), and the buffer works as new afterwards, also with
// clustered fingerprints that share home slots and runs that wrap around.
func TestBufferReset(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := newBuffer(1024) // 2048 slots
	for round, n := range []int{0, 1, 7, 100, 255, 256, 900, 1024, 3000, 50} {
		var fps []uint64
		for i := range n {
			fp := r.Uint64()
			if i%3 == 0 {
				fp = uint64(i) // the same high bits: one home slot
			}
			if i%5 == 0 {
				fp = 0xFFFF_FFFF_FFFF_FF00 + uint64(i%200) // homes in the last slots
			}
			if b.insert(fp) {
				fps = append(fps, fp)
			}
		}
		for i, fp := range fps {
			if got := b.lookup(fp); got != i {
				t.Fatalf("round %d: lookup of entry %d = %d", round, i, got)
			}
		}
		b.reset()
		if b.len() != 0 {
			t.Fatalf("round %d: %d entries after reset", round, b.len())
		}
		for i, s := range b.slots {
			if s != 0 {
				t.Fatalf("round %d (%d entries): slot %d = %d after reset", round, len(fps), i, s)
			}
		}
		for _, fp := range fps {
			if b.lookup(fp) != -1 {
				t.Fatalf("round %d: %#x still found after reset", round, fp)
			}
		}
	}
}
