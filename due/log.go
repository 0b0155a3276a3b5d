package due

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The buffer log is a sequence of chunks, one per group commit:
//
//	u32 payload length | u32 CRC-32C of payload | records
//	record = u64 fingerprint | uvarint meta | uvarint URL length | URL bytes
//	meta   = depth<<1 | seen-only flag
//
// Only the newest log may end in a torn chunk (a crash during a write); it is
// cut off on recovery. A bad chunk anywhere else is corruption.
const chunkHeaderLen = 8

// chunk accumulates records for one write.
type chunk struct {
	buf []byte // chunkHeaderLen reserved bytes, then records
	n   int    // records
}

func (c *chunk) reset() {
	if c.buf == nil {
		c.buf = make([]byte, chunkHeaderLen, 64<<10)
	}
	c.buf, c.n = c.buf[:chunkHeaderLen], 0
}

func (c *chunk) add(e *Entry) {
	c.buf = binary.LittleEndian.AppendUint64(c.buf, e.FP)
	c.buf = binary.AppendUvarint(c.buf, e.meta())
	c.buf = binary.AppendUvarint(c.buf, uint64(len(e.URL)))
	c.buf = append(c.buf, e.URL...)
	c.n++
}

// meta packs the depth and the seen-only flag of a log record.
func (e *Entry) meta() uint64 {
	m := uint64(e.Depth) << 1
	if e.SeenOnly {
		m |= 1
	}
	return m
}

// record is one decoded log record; URL aliases the read buffer.
type record struct {
	fp       uint64
	depth    uint16
	seenOnly bool
	url      []byte
}

func (c *chunk) len() int { return len(c.buf) - chunkHeaderLen }

// seal fills in the header and returns the bytes to write.
func (c *chunk) seal() []byte {
	p := c.buf[chunkHeaderLen:]
	binary.LittleEndian.PutUint32(c.buf, uint32(len(p)))
	binary.LittleEndian.PutUint32(c.buf[4:], crc(p))
	return c.buf
}

// logFile is an open, append-only log.
type logFile struct {
	num  uint64
	f    vfs.File
	size atomic.Int64 // written by the appender, read by Stats
}

func (l *logFile) write(c *chunk) error {
	if c.n == 0 {
		return nil
	}
	b := c.seal()
	n, err := l.f.Write(b)
	l.size.Add(int64(n))
	return err
}

// readLog calls fn for every record of the log at path, in order. It
// returns the length of the valid prefix and whether the file ended in a
// torn chunk (a chunk that is incomplete or fails its checksum and reaches
// the end of the file). A bad chunk followed by more data is ErrCorrupt.
func readLog(fs vfs.FS, path string, fn func(r *record) error) (valid int64, torn bool, err error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, false, fmt.Errorf("due: open log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	size := st.Size()
	// Sized to the file: a kicked merge reads a log of a few KiB, and a
	// 1 MiB buffer for it was most of the merge's allocation.
	r := bufio.NewReaderSize(f, int(min(max(size, 4096), 1<<20)))
	var hdr [chunkHeaderLen]byte
	var payload []byte
	for valid < size {
		if size-valid < chunkHeaderLen {
			return valid, true, nil
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return valid, false, err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:]))
		end := valid + chunkHeaderLen + n
		if end > size {
			return valid, true, nil
		}
		if int64(cap(payload)) < n {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			return valid, false, err
		}
		if crc(payload) != binary.LittleEndian.Uint32(hdr[4:]) {
			if end == size {
				return valid, true, nil
			}
			return valid, false, fmt.Errorf("%w: log %s: chunk at %d fails its checksum", ErrCorrupt, path, valid)
		}
		if err := eachRecord(payload, fn); err != nil {
			return valid, false, fmt.Errorf("log %s chunk at %d: %w", path, valid, err)
		}
		valid = end
	}
	return valid, false, nil
}

var errBadRecord = errors.New("bad record")

func eachRecord(p []byte, fn func(r *record) error) error {
	var r record
	bad := fmt.Errorf("%w: %w", ErrCorrupt, errBadRecord)
	for len(p) > 0 {
		if len(p) < 10 {
			return bad
		}
		r.fp = binary.LittleEndian.Uint64(p)
		p = p[8:]
		m, k := binary.Uvarint(p)
		if k <= 0 || m>>1 > math.MaxUint16 {
			return bad
		}
		r.depth, r.seenOnly = uint16(m>>1), m&1 != 0
		p = p[k:]
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return bad
		}
		r.url = p[k : k+int(n)]
		if err := fn(&r); err != nil {
			return err
		}
		p = p[k+int(n):]
	}
	return nil
}
