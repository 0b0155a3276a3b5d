package due

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The buffer log is a sequence of chunks, one per group commit:
//
//	u32 payload length | u32 CRC-32C of payload | records
//	record = u64 fingerprint | uvarint URL length | URL bytes
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

func (c *chunk) add(fp uint64, url string) {
	c.buf = binary.LittleEndian.AppendUint64(c.buf, fp)
	c.buf = binary.AppendUvarint(c.buf, uint64(len(url)))
	c.buf = append(c.buf, url...)
	c.n++
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
	size int64
}

func (l *logFile) write(c *chunk) error {
	if c.n == 0 {
		return nil
	}
	b := c.seal()
	n, err := l.f.Write(b)
	l.size += int64(n)
	return err
}

// readLog calls fn for every record of the log at path, in order. It
// returns the length of the valid prefix and whether the file ended in a
// torn chunk (a chunk that is incomplete or fails its checksum and reaches
// the end of the file). A bad chunk followed by more data is ErrCorrupt.
func readLog(fs vfs.FS, path string, fn func(fp uint64, url []byte) error) (valid int64, torn bool, err error) {
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
	r := bufio.NewReaderSize(f, 1<<20)
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

func eachRecord(p []byte, fn func(fp uint64, url []byte) error) error {
	for len(p) > 0 {
		if len(p) < 9 {
			return fmt.Errorf("%w: %w", ErrCorrupt, errBadRecord)
		}
		fp := binary.LittleEndian.Uint64(p)
		n, k := binary.Uvarint(p[8:])
		if k <= 0 || n > uint64(len(p)-8-k) {
			return fmt.Errorf("%w: %w", ErrCorrupt, errBadRecord)
		}
		s := 8 + k
		if err := fn(fp, p[s:s+int(n)]); err != nil {
			return err
		}
		p = p[s+int(n):]
	}
	return nil
}
