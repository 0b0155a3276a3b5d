package due

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func randSorted(rng *rand.Rand, n int, spread uint64) []uint64 {
	m := map[uint64]bool{}
	base := rng.Uint64()
	for len(m) < n {
		v := base + rng.Uint64N(spread)
		if v < base {
			v = rng.Uint64()
		}
		m[v] = true
	}
	out := make([]uint64, 0, n)
	for v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func TestBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := [][]uint64{
		{0}, {^uint64(0)}, {0, ^uint64(0)}, {1, 2, 3, 4, 5}, {0, 1 << 63},
	}
	for _, n := range []int{1, 2, 7, 64, 2048, 4096} {
		for _, spread := range []uint64{uint64(n) * 2, 1 << 40, ^uint64(0)} {
			cases = append(cases, randSorted(rng, n, spread))
		}
	}
	for _, vals := range cases {
		b := appendBlock(nil, vals)
		got, err := decodeBlock(nil, b)
		if err != nil {
			t.Fatalf("decode(%d values): %v", len(vals), err)
		}
		if !slices.Equal(got, vals) {
			t.Fatalf("round trip of %d values differs", len(vals))
		}
		// Every single-bit flip is detected.
		for i := 0; i < len(b); i += 1 + len(b)/50 {
			c := slices.Clone(b)
			c[i] ^= 1 << (i % 8)
			if _, err := decodeBlock(nil, c); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip at byte %d of %d: err %v", i, len(b), err)
			}
		}
		if _, err := decodeBlock(nil, b[:len(b)-1]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated block: err %v", err)
		}
	}
}

// At 10⁸ random fingerprints the gaps are ≈ 2⁶⁴/10⁸; blocks must stay
// within the 5 bytes per fingerprint target.
func TestBlockDensity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 2048
	vals := randSorted(rng, n, n*(^uint64(0)/100_000_000))
	b := appendBlock(nil, vals)
	per := float64(len(b)) / n
	t.Logf("%.3f bytes per fingerprint at density 1e8", per)
	if per > 5 {
		t.Fatalf("%.3f bytes per fingerprint, want ≤ 5", per)
	}
}

func FuzzDecodeBlock(f *testing.F) {
	f.Add(appendBlock(nil, []uint64{1, 5, 9, 1 << 40}))
	f.Add(appendBlock(nil, []uint64{0}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		// Raw payloads too: the checksum must not be the only defence.
		var dc decoder
		for _, in := range [][]byte{b, seal(b)} {
			vals, err := dc.decode(nil, in)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v does not wrap ErrCorrupt", err)
				}
				continue
			}
			if len(vals) == 0 || !slices.IsSorted(vals) {
				t.Fatalf("decoded %v", vals)
			}
			re := appendBlock(nil, vals)
			got, err := decodeBlock(nil, re)
			if err != nil || !slices.Equal(got, vals) {
				t.Fatalf("re-encode mismatch: %v", err)
			}
		}
	})
}

// seal wraps an arbitrary payload in a valid block header.
func seal(p []byte) []byte {
	c := chunk{buf: append(make([]byte, chunkHeaderLen), p...), n: 1}
	return c.seal()
}
