package hostsplit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// ErrMalformedBatch is wrapped by every error DecodeBatch returns for input
// that is not a well-formed batch within its limits.
var ErrMalformedBatch = errors.New("hostsplit: malformed batch")

// Codec selects the block compression applied after front coding. The first
// byte of an encoded batch names its codec, so DecodeBatch needs no hint.
type Codec uint8

const (
	// CodecFront is front coding alone.
	CodecFront Codec = 1
	// CodecFrontZstd is front coding, then one zstd frame (the default: the
	// smallest on URL batches; see docs/bench/hostsplit.md).
	CodecFrontZstd Codec = 2
	// CodecFrontS2 is front coding, then one S2 block (faster, larger).
	CodecFrontS2 Codec = 3
)

func (c Codec) String() string {
	switch c {
	case CodecFront:
		return "front"
	case CodecFrontZstd:
		return "front+zstd"
	case CodecFrontS2:
		return "front+s2"
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// HardMaxDecodedBytes caps Limits.MaxDecodedBytes: the zstd decoder never
// allocates more than this for one batch.
const HardMaxDecodedBytes = 64 << 20

// Limits bound what DecodeBatch accepts. Zero fields take the defaults.
type Limits struct {
	MaxURLs         int // URLs per batch; default 4096
	MaxURLLen       int // bytes per URL; default 4096
	MaxDecodedBytes int // front-coded payload after decompression; default 8 MiB
}

// EnsureDefaults fills zero fields with their defaults.
func (l *Limits) EnsureDefaults() {
	if l.MaxURLs == 0 {
		l.MaxURLs = 4096
	}
	if l.MaxURLLen == 0 {
		l.MaxURLLen = 4096
	}
	if l.MaxDecodedBytes == 0 {
		l.MaxDecodedBytes = 8 << 20
	}
}

// Validate reports limits that are out of range.
func (l *Limits) Validate() error {
	var errs []error
	if l.MaxURLs < 1 {
		errs = append(errs, fmt.Errorf("hostsplit: Limits.MaxURLs %d < 1", l.MaxURLs))
	}
	if l.MaxURLLen < 1 {
		errs = append(errs, fmt.Errorf("hostsplit: Limits.MaxURLLen %d < 1", l.MaxURLLen))
	}
	if l.MaxDecodedBytes < 1 || l.MaxDecodedBytes > HardMaxDecodedBytes {
		errs = append(errs, fmt.Errorf("hostsplit: Limits.MaxDecodedBytes %d not in [1, %d]", l.MaxDecodedBytes, HardMaxDecodedBytes))
	}
	return errors.Join(errs...)
}

var (
	zstdEnc = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err) // only on invalid static options
		}
		return e
	})
	zstdDec = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(HardMaxDecodedBytes))
		if err != nil {
			panic(err)
		}
		return d
	})
)

// EncodeBatch appends to dst the encoding of urls: a codec byte, then (for
// the compressed codecs) the uvarint length of the front-coded payload and
// the compressed payload. If compression would not make the batch smaller
// (tiny batches), the batch is encoded with CodecFront instead. The payload is the uvarint URL count followed by
// each URL in sorted order as (uvarint length of the prefix shared with the
// previous URL, uvarint suffix length, suffix). urls is not modified.
// EncodeBatch is safe for concurrent use.
func EncodeBatch(dst []byte, urls []string, c Codec) ([]byte, error) {
	switch c {
	case CodecFront:
		return frontCode(append(dst, byte(c)), urls), nil
	case CodecFrontZstd, CodecFrontS2:
	default:
		return nil, fmt.Errorf("hostsplit: unknown codec %d", c)
	}
	raw := frontCode(nil, urls)
	start := len(dst)
	dst = append(dst, byte(c))
	dst = binary.AppendUvarint(dst, uint64(len(raw)))
	if c == CodecFrontZstd {
		dst = zstdEnc().EncodeAll(raw, dst)
	} else {
		dst = append(dst, s2.Encode(nil, raw)...)
	}
	if len(dst)-start > len(raw) {
		dst = append(dst[:start], byte(CodecFront))
		dst = append(dst, raw...)
	}
	return dst, nil
}

func frontCode(dst []byte, urls []string) []byte {
	sorted := urls
	if !slices.IsSorted(urls) {
		sorted = slices.Clone(urls)
		slices.Sort(sorted)
	}
	dst = binary.AppendUvarint(dst, uint64(len(sorted)))
	prev := ""
	for _, u := range sorted {
		n := sharedPrefix(prev, u)
		dst = binary.AppendUvarint(dst, uint64(n))
		dst = binary.AppendUvarint(dst, uint64(len(u)-n))
		dst = append(dst, u[n:]...)
		prev = u
	}
	return dst
}

func sharedPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// DecodeBatch decodes a batch made by EncodeBatch, returning its URLs in
// sorted order. Any input that is not a well-formed batch within lim —
// unknown codec, truncation, trailing bytes, a prefix longer than the
// previous URL, unsorted URLs, too many or too long URLs, too many decoded
// bytes — yields an error wrapping ErrMalformedBatch. Zero fields of lim
// take their defaults. DecodeBatch is safe for concurrent use.
func DecodeBatch(data []byte, lim Limits) ([]string, error) {
	lim.EnsureDefaults()
	if err := lim.Validate(); err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrMalformedBatch)
	}
	c, body := Codec(data[0]), data[1:]
	var raw []byte
	switch c {
	case CodecFront:
		if len(body) > lim.MaxDecodedBytes {
			return nil, fmt.Errorf("%w: %d bytes exceed the limit %d", ErrMalformedBatch, len(body), lim.MaxDecodedBytes)
		}
		raw = body
	case CodecFrontZstd, CodecFrontS2:
		n, k := binary.Uvarint(body)
		if k <= 0 {
			return nil, fmt.Errorf("%w: bad length header", ErrMalformedBatch)
		}
		if n > uint64(lim.MaxDecodedBytes) {
			return nil, fmt.Errorf("%w: %d decoded bytes exceed the limit %d", ErrMalformedBatch, n, lim.MaxDecodedBytes)
		}
		var err error
		if raw, err = decompress(c, body[k:], int(n)); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: unknown codec %d", ErrMalformedBatch, data[0])
	}
	return decodeFront(raw, lim)
}

func decompress(c Codec, src []byte, n int) ([]byte, error) {
	var out []byte
	var err error
	if c == CodecFrontS2 {
		dl, derr := s2.DecodedLen(src)
		if derr != nil || dl != n {
			return nil, fmt.Errorf("%w: s2 block length %d, header says %d (%v)", ErrMalformedBatch, dl, n, derr)
		}
		out, err = s2.Decode(make([]byte, n), src)
	} else {
		out, err = zstdDec().DecodeAll(src, make([]byte, 0, n))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformedBatch, c, err)
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: %s: decoded %d bytes, header says %d", ErrMalformedBatch, c, len(out), n)
	}
	return out, nil
}

func decodeFront(raw []byte, lim Limits) ([]string, error) {
	count, k := binary.Uvarint(raw)
	if k <= 0 {
		return nil, fmt.Errorf("%w: bad count", ErrMalformedBatch)
	}
	if count > uint64(lim.MaxURLs) {
		return nil, fmt.Errorf("%w: %d URLs exceed the limit %d", ErrMalformedBatch, count, lim.MaxURLs)
	}
	raw = raw[k:]
	// Every URL costs at least two bytes of headers: reject impossible
	// counts before allocating for them.
	if count > uint64(len(raw)/2) {
		return nil, fmt.Errorf("%w: %d URLs cannot fit in %d bytes", ErrMalformedBatch, count, len(raw))
	}
	ends := make([]int, 0, count)
	arena := make([]byte, 0, 2*len(raw))
	prevStart := 0
	for i := uint64(0); i < count; i++ {
		shared, k1 := binary.Uvarint(raw)
		if k1 <= 0 {
			return nil, fmt.Errorf("%w: URL %d: bad prefix length", ErrMalformedBatch, i)
		}
		suffix, k2 := binary.Uvarint(raw[k1:])
		if k2 <= 0 {
			return nil, fmt.Errorf("%w: URL %d: bad suffix length", ErrMalformedBatch, i)
		}
		raw = raw[k1+k2:]
		prevLen := len(arena) - prevStart
		if shared > uint64(prevLen) {
			return nil, fmt.Errorf("%w: URL %d: shared prefix %d longer than previous URL (%d)", ErrMalformedBatch, i, shared, prevLen)
		}
		if suffix > uint64(len(raw)) {
			return nil, fmt.Errorf("%w: URL %d: suffix length %d beyond the end", ErrMalformedBatch, i, suffix)
		}
		if shared+suffix > uint64(lim.MaxURLLen) {
			return nil, fmt.Errorf("%w: URL %d: length %d exceeds the limit %d", ErrMalformedBatch, i, shared+suffix, lim.MaxURLLen)
		}
		if len(arena)+int(shared+suffix) > lim.MaxDecodedBytes {
			return nil, fmt.Errorf("%w: URLs exceed %d decoded bytes", ErrMalformedBatch, lim.MaxDecodedBytes)
		}
		start := len(arena)
		arena = append(arena, arena[prevStart:prevStart+int(shared)]...)
		arena = append(arena, raw[:suffix]...)
		raw = raw[suffix:]
		if i > 0 && string(arena[start:]) < string(arena[prevStart:start]) {
			return nil, fmt.Errorf("%w: URL %d out of order", ErrMalformedBatch, i)
		}
		ends = append(ends, len(arena))
		prevStart = start
	}
	if len(raw) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformedBatch, len(raw))
	}
	// One string backs all URLs: a single allocation for the batch. The
	// arena is never written again.
	all := unsafe.String(unsafe.SliceData(arena), len(arena))
	urls := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		urls[i] = all[start:end]
		start = end
	}
	return urls, nil
}
