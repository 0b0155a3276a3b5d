package due

import "slices"

// sortU64 sorts v ascending: LSD radix sort with 16-bit digits (four
// passes, one scratch copy) for large inputs, pdqsort for small ones.
func sortU64(v []uint64) {
	if len(v) < 1<<12 {
		slices.Sort(v)
		return
	}
	tmp := make([]uint64, len(v))
	src, dst := v, tmp
	var count [1 << 16]int
	for shift := uint(0); shift < 64; shift += 16 {
		clear(count[:])
		for _, x := range src {
			count[(x>>shift)&0xffff]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, x := range src {
			d := (x >> shift) & 0xffff
			dst[count[d]] = x
			count[d]++
		}
		src, dst = dst, src
	}
	// Four passes: the result is back in v.
}
