package due

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
)

// A block holds up to a few thousand strictly increasing fingerprints,
// Elias-Fano coded: each value v is split into d = v-base; the low l bits of
// d are stored packed, the high bits as a unary bitmap (bit (d>>l)+i set for
// the i-th value). For n random 64-bit fingerprints spread over a range u this
// costs about n·(log2(u/n)+2) bits: ≈ 4.9 bytes per fingerprint at 10⁸ keys,
// against 8 raw and ≈ 5.8 for varint deltas.
//
// Encoded layout (all integers little-endian):
//
//	u32 payload length | u32 CRC-32C of payload | payload
//	payload = uvarint n | u64 base | u8 l | uvarint highWords |
//	          lowWords×u64 | highWords×u64
//
// with lowWords = ceil(n·l/64).
const blockHeaderLen = 8

// maxBlockEntries bounds n in a decoded block, so a corrupt count cannot make
// the decoder allocate without limit.
const maxBlockEntries = 1 << 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// appendBlock appends the encoding of vals (strictly increasing, non-empty,
// len ≤ maxBlockEntries) to dst.
func appendBlock(dst []byte, vals []uint64) []byte {
	n := len(vals)
	base := vals[0]
	u := vals[n-1] - base
	l := uint(0)
	if q := u / uint64(n); q > 0 {
		l = uint(bits.Len64(q)) - 1
	}
	lowWords := (n*int(l) + 63) / 64
	highBits := uint64(n) + (u >> l) + 1
	highWords := int((highBits + 63) / 64)

	start := len(dst)
	dst = append(dst, make([]byte, blockHeaderLen)...)
	p := len(dst)
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = binary.LittleEndian.AppendUint64(dst, base)
	dst = append(dst, byte(l))
	dst = binary.AppendUvarint(dst, uint64(highWords))
	words := make([]uint64, lowWords+highWords)
	lows, highs := words[:lowWords], words[lowWords:]
	mask := uint64(1)<<l - 1
	for i, v := range vals {
		d := v - base
		if l > 0 {
			pos := uint(i) * l
			w, s := pos/64, pos%64
			lo := d & mask
			lows[w] |= lo << s
			if s+l > 64 {
				lows[w+1] |= lo >> (64 - s)
			}
		}
		h := (d >> l) + uint64(i)
		highs[h/64] |= 1 << (h % 64)
	}
	for _, w := range words {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-p))
	binary.LittleEndian.PutUint32(dst[start+4:], crc(dst[p:]))
	return dst
}

// blockLen returns the total encoded length of the block starting at b, or
// an error if the header is incomplete.
func blockLen(b []byte) (int, error) {
	if len(b) < blockHeaderLen {
		return 0, fmt.Errorf("%w: short block header (%d bytes)", ErrCorrupt, len(b))
	}
	return blockHeaderLen + int(binary.LittleEndian.Uint32(b)), nil
}

// decodeBlock decodes the single block that b holds exactly, appending the
// values to dst[:0]. It verifies the checksum and every structural invariant
// (sizes, bit counts, strict increase), so arbitrary input yields either the
// values that were encoded or an error wrapping ErrCorrupt; it never panics.
func decodeBlock(dst []uint64, b []byte) ([]uint64, error) {
	var d decoder
	return d.decode(dst, b)
}

// decoder decodes blocks, reusing its scratch space between calls. Not safe
// for concurrent use.
type decoder struct{ words []uint64 }

func (dc *decoder) decode(dst []uint64, b []byte) ([]uint64, error) {
	n, err := blockLen(b)
	if err != nil {
		return dst[:0], err
	}
	if n != len(b) {
		return dst[:0], fmt.Errorf("%w: block length %d, have %d bytes", ErrCorrupt, n, len(b))
	}
	payload := b[blockHeaderLen:]
	if got, want := crc(payload), binary.LittleEndian.Uint32(b[4:]); got != want {
		return dst[:0], fmt.Errorf("%w: block checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	return dc.payload(dst[:0], payload)
}

func (dc *decoder) payload(dst []uint64, p []byte) ([]uint64, error) {
	bad := func(what string) ([]uint64, error) {
		return dst, fmt.Errorf("%w: block %s", ErrCorrupt, what)
	}
	cnt, k := binary.Uvarint(p)
	if k <= 0 || cnt == 0 || cnt > maxBlockEntries {
		return bad("count")
	}
	p = p[k:]
	if len(p) < 9 {
		return bad("header")
	}
	base := binary.LittleEndian.Uint64(p)
	l := uint(p[8])
	p = p[9:]
	if l > 63 {
		return bad("low-bit width")
	}
	hw, k := binary.Uvarint(p)
	if k <= 0 || hw > uint64(len(p)) {
		return bad("high words")
	}
	p = p[k:]
	n := int(cnt)
	lw := (n*int(l) + 63) / 64
	if uint64(len(p)) != uint64(lw+int(hw))*8 {
		return bad("size")
	}
	// One spare word lets the low-bit extraction read w+1 unconditionally.
	need := lw + 1 + int(hw)
	if cap(dc.words) < need {
		dc.words = make([]uint64, need)
	}
	words := dc.words[:need]
	words[lw] = 0
	for i := 0; i < lw; i++ {
		words[i] = binary.LittleEndian.Uint64(p[8*i:])
	}
	highs := words[lw+1:]
	for i := range highs {
		highs[i] = binary.LittleEndian.Uint64(p[8*(lw+i):])
	}
	lows := words[:lw+1]
	mask := uint64(1)<<l - 1
	if cap(dst) < n {
		dst = make([]uint64, 0, n)
	}
	dst = dst[:n]
	i := 0
	var prev uint64
	for wi, w := range highs {
		for w != 0 && i < n {
			t := uint(bits.TrailingZeros64(w))
			w &= w - 1
			h := uint64(wi)*64 + uint64(t) - uint64(i)
			var lo uint64
			if l > 0 {
				pos := uint(i) * l
				ws, s := pos/64, pos%64
				lo = lows[ws] >> s
				if s+l > 64 {
					lo |= lows[ws+1] << (64 - s)
				}
				lo &= mask
			}
			if l > 0 && h > (^uint64(0))>>l {
				return bad("high part overflow")
			}
			d := h<<l | lo
			v := base + d
			if v < base || (i > 0 && v <= prev) || (i == 0 && d != 0) {
				return bad("order")
			}
			dst[i] = v
			prev = v
			i++
		}
		if w != 0 {
			return bad("extra high bits")
		}
	}
	if i != n {
		return bad("missing high bits")
	}
	return dst, nil
}
