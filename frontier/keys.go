package frontier

import (
	"encoding/binary"
	"errors"
	"time"
)

// Key layout in pebble (all integers big-endian so keys sort numerically):
//
//	b <host> 0x00 <seq:8>        back queue entry       → entry value
//	c <host>                     host politeness state  → next:8 (unix ns) failures:uvarint
//	f <prio:1> <seq:8>           front queue entry      → entry value
//	x <source>                   last AddBatch seq applied for source → seq:8
//	y <site>                     URLs admitted under the budget → count:uvarint
//	z n | z f | z s              counters: URLs stored, URLs under front keys, next seq
//
// A leased URL keeps its key until Done, so a crash hands it out again.
// Entry value: prio:1 depth:uvarint hostlen:uvarint host url.
//
// The keys rewritten by every batch (x, y, z) sort after the front queues,
// whose new keys always have the highest seq: a flushed sstable then spans
// only [newest front keys, z] and does not overlap the bulk of the front
// queues, so compactions move those files instead of rewriting them.
const (
	prefixHost   = 'b'
	prefixState  = 'c'
	prefixFront  = 'f'
	prefixApply  = 'x'
	prefixBudget = 'y'
)

var (
	keyCount      = []byte("zn")
	keyFrontCount = []byte("zf")
	keyNextSeq    = []byte("zs")
)

var errCorrupt = errors.New("frontier: corrupt entry")

func frontPrefix(prio uint8) []byte { return []byte{prefixFront, prio} }

func frontKey(prio uint8, seq uint64) []byte {
	k := make([]byte, 2, 10)
	k[0], k[1] = prefixFront, prio
	return binary.BigEndian.AppendUint64(k, seq)
}

func hostPrefix(host string) []byte {
	k := make([]byte, 0, len(host)+10)
	k = append(k, prefixHost)
	k = append(k, host...)
	return append(k, 0)
}

func hostKey(host string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(hostPrefix(host), seq)
}

// prefixEnd is the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

func seqOfKey(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }

func stateKey(host string) []byte   { return append([]byte{prefixState}, host...) }
func applyKey(source string) []byte { return append([]byte{prefixApply}, source...) }

func encodeEntry(dst []byte, it *Item) []byte {
	dst = append(dst, it.Priority)
	dst = binary.AppendUvarint(dst, uint64(it.Depth))
	dst = binary.AppendUvarint(dst, uint64(len(it.Host)))
	dst = append(dst, it.Host...)
	return append(dst, it.URL...)
}

func decodeEntry(v []byte) (Item, error) {
	var it Item
	if len(v) < 1 {
		return it, errCorrupt
	}
	it.Priority = v[0]
	v = v[1:]
	d, n := binary.Uvarint(v)
	if n <= 0 || d > 0xffff {
		return it, errCorrupt
	}
	it.Depth = uint16(d)
	v = v[n:]
	hl, n := binary.Uvarint(v)
	if n <= 0 || hl > uint64(len(v)-n) {
		return it, errCorrupt
	}
	v = v[n:]
	it.Host = string(v[:hl])
	it.URL = string(v[hl:])
	return it, nil
}

func encodeState(next time.Time, failures int) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(next.UnixNano()))
	return binary.AppendUvarint(b, uint64(failures))
}

func decodeState(v []byte) (next time.Time, failures int, err error) {
	if len(v) < 9 {
		return next, 0, errCorrupt
	}
	next = time.Unix(0, int64(binary.BigEndian.Uint64(v)))
	f, n := binary.Uvarint(v[8:])
	if n <= 0 {
		return next, 0, errCorrupt
	}
	return next, int(f), nil
}

func encodeU64(x uint64) []byte { return binary.BigEndian.AppendUint64(nil, x) }

func decodeU64(v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, errCorrupt
	}
	return binary.BigEndian.Uint64(v), nil
}
