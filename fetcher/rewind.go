package fetcher

import (
	"errors"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// ErrBufferClosed is returned by readers of a closed RewindBuffer.
var ErrBufferClosed = errors.New("fetcher: rewind buffer closed")

// RewindBuffer is the RewindInputStream of the crawler: a body written once,
// then read from the start any number of times by successive processors
// (link extractor, content fingerprint, WARC writer). The first MemThreshold
// bytes stay in memory; beyond that the whole body moves to a temporary file.
//
// The temporary file is unlinked as soon as it is created, so it vanishes
// when the buffer is closed, when the buffer is garbage collected without
// Close (a cleanup closes the descriptor), and when the process dies.
//
// Writing is not safe for concurrent use. Once written, NewReader, Len,
// Bytes and Fingerprint may be called concurrently; Close must not race
// with them. Close is idempotent.
type RewindBuffer struct {
	threshold int64
	dir       string
	mem       []byte
	file      *tempFile
	size      int64
	closed    bool
}

// tempFile is held separately so that a cleanup can close it without
// keeping the RewindBuffer alive.
type tempFile struct{ f *os.File }

// NewRewindBuffer returns an empty buffer that spills to a file in dir once
// it holds more than threshold bytes.
func NewRewindBuffer(threshold int64, dir string) *RewindBuffer {
	return &RewindBuffer{threshold: threshold, dir: dir}
}

// Write appends p. It spills to disk when the threshold is crossed.
func (b *RewindBuffer) Write(p []byte) (int, error) {
	if b.closed {
		return 0, ErrBufferClosed
	}
	if b.file == nil && int64(len(b.mem))+int64(len(p)) <= b.threshold {
		b.mem = append(b.mem, p...)
		b.size += int64(len(p))
		return len(p), nil
	}
	if b.file == nil {
		if err := b.spill(); err != nil {
			return 0, err
		}
	}
	n, err := b.file.f.Write(p)
	b.size += int64(n)
	return n, err
}

// ReadFrom reads r to EOF into the buffer (io.Copy uses it): while in
// memory it reads straight into the buffer's spare capacity, so a small
// body costs one allocation of about its size.
func (b *RewindBuffer) ReadFrom(r io.Reader) (int64, error) {
	if b.closed {
		return 0, ErrBufferClosed
	}
	start := b.size
	for b.file == nil {
		if len(b.mem) == cap(b.mem) {
			if int64(len(b.mem)) >= b.threshold {
				// Full: any further byte means spilling.
				var probe [4096]byte
				n, err := r.Read(probe[:])
				if n > 0 {
					if _, werr := b.Write(probe[:n]); werr != nil {
						return b.size - start, werr
					}
				}
				if err != nil {
					return b.size - start, eofNil(err)
				}
				continue
			}
			b.grow(max(2*cap(b.mem), minGrow))
		}
		n, err := r.Read(b.mem[len(b.mem):cap(b.mem)])
		b.mem = b.mem[:len(b.mem)+n]
		b.size += int64(n)
		if err != nil {
			return b.size - start, eofNil(err)
		}
	}
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)
	_, err := io.CopyBuffer(writerOnly{b}, r, *bufp)
	return b.size - start, err
}

// minGrow is the smallest in-memory allocation when the size is unknown.
const minGrow = 4096

// grow makes room for n bytes in memory in total, capped at the threshold.
func (b *RewindBuffer) grow(n int) {
	n = int(min(int64(n), b.threshold))
	if n <= cap(b.mem) {
		return
	}
	m := make([]byte, len(b.mem), n)
	copy(m, b.mem)
	b.mem = m
}

// sizeHint preallocates for a body of n bytes (e.g. Content-Length), plus
// one byte so that reading the end needs no growth.
func (b *RewindBuffer) sizeHint(n int64) {
	if n > 0 && b.file == nil && n < b.threshold {
		b.grow(int(n) + 1)
	}
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// writerOnly hides ReadFrom so that io.CopyBuffer uses the given buffer.
type writerOnly struct{ io.Writer }

func eofNil(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}

// spill moves the in-memory bytes to a fresh unlinked temporary file.
func (b *RewindBuffer) spill() error {
	f, err := os.CreateTemp(b.dir, "sextant-body-*")
	if err != nil {
		return err
	}
	// Unlink now: the open descriptor keeps the data; nothing can leak.
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return err
	}
	tf := &tempFile{f: f}
	runtime.AddCleanup(b, func(tf *tempFile) { tf.f.Close() }, tf)
	if _, err := f.Write(b.mem); err != nil {
		f.Close()
		return err
	}
	b.file = tf
	b.mem = nil
	return nil
}

// Len returns the number of bytes written.
func (b *RewindBuffer) Len() int64 { return b.size }

// Spilled reports whether the body lives in a temporary file.
func (b *RewindBuffer) Spilled() bool { return b.file != nil }

// Bytes returns the body if it is held in memory (the slice must not be
// modified), or nil, false if it spilled to disk.
func (b *RewindBuffer) Bytes() ([]byte, bool) {
	if b.file != nil || b.closed {
		return nil, false
	}
	return b.mem, true
}

// NewReader returns an independent reader positioned at the start of the
// body. Readers share no state; each may also Seek and ReadAt.
func (b *RewindBuffer) NewReader() *io.SectionReader {
	switch {
	case b.closed:
		return io.NewSectionReader(closedReaderAt{}, 0, 1)
	case b.file != nil:
		return io.NewSectionReader(b.file.f, 0, b.size)
	}
	return io.NewSectionReader(bytesReaderAt(b.mem), 0, b.size)
}

// Fingerprint returns the xxHash64 of the body, for Mercator's content-seen
// test: documents with equal fingerprints are taken as identical.
func (b *RewindBuffer) Fingerprint() (uint64, error) {
	if m, ok := b.Bytes(); ok {
		return xxhash.Sum64(m), nil
	}
	h := xxhash.New()
	if _, err := io.Copy(h, b.NewReader()); err != nil {
		return 0, err
	}
	return h.Sum64(), nil
}

// Close releases the memory and the temporary file.
func (b *RewindBuffer) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	b.mem = nil
	if b.file != nil {
		return b.file.f.Close()
	}
	return nil
}

type bytesReaderAt []byte

func (m bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(p, m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

type closedReaderAt struct{}

func (closedReaderAt) ReadAt([]byte, int64) (int, error) { return 0, ErrBufferClosed }
