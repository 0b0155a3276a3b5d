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
// The in-memory body is a pooled buffer (bodypool.go), reused by another
// RewindBuffer once this one is closed: Close must not race with any use of
// the buffer or of its readers, a reader used after Close fails with
// ErrBufferClosed, and the slice Bytes returns is valid only until Close.
//
// Writing is not safe for concurrent use. Once written, NewReader, Len,
// Bytes, Fingerprint and the readers may be used concurrently; Close must
// not race with them. Close is idempotent.
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
		if len(b.mem)+len(p) > cap(b.mem) {
			b.grow(len(b.mem) + len(p))
		}
		b.mem = append(b.mem, p...)
		b.size += int64(len(p))
		return len(p), nil
	}
	if b.file == nil {
		if err := b.spill(); err != nil {
			return 0, &classError{ErrLocal, err, true, nil}
		}
	}
	n, err := b.file.f.Write(p)
	b.size += int64(n)
	if err != nil {
		err = &classError{ErrLocal, err, true, nil}
	}
	return n, err
}

// ReadFrom reads r to EOF into the buffer (io.Copy uses it). Up to the
// threshold it reads straight into the pooled in-memory buffer, which
// doubles as needed; past it (the body spills) through a pooled 32 KiB
// block.
func (b *RewindBuffer) ReadFrom(r io.Reader) (int64, error) {
	if b.closed {
		return 0, ErrBufferClosed
	}
	start := b.size
	for b.file == nil && int64(len(b.mem)) < b.threshold {
		if len(b.mem) == cap(b.mem) {
			b.grow(max(2*cap(b.mem), firstBuf))
		}
		end := int(min(int64(cap(b.mem)), b.threshold))
		n, err := r.Read(b.mem[len(b.mem):end])
		b.mem = b.mem[:len(b.mem)+n]
		b.size += int64(n)
		switch err {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF: // as the io.ReadFull loop below
			return b.size - start, nil
		default:
			return b.size - start, err
		}
	}
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)
	for {
		n, err := io.ReadFull(r, *bufp)
		if n > 0 {
			if _, werr := b.Write((*bufp)[:n]); werr != nil {
				return b.size - start, werr
			}
		}
		switch err {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return b.size - start, nil
		default:
			return b.size - start, err
		}
	}
}

// firstBuf is the first buffer of a body of unknown length.
const firstBuf = 16 << 10

// grow makes room for n bytes in memory in total, capped at the threshold,
// with a buffer from the pool; the old one goes back.
func (b *RewindBuffer) grow(n int) {
	n = int(min(int64(n), b.threshold))
	if n <= cap(b.mem) {
		return
	}
	m := bodies.get(n)[:len(b.mem)]
	copy(m, b.mem)
	bodies.put(b.mem)
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
	bodies.put(b.mem)
	b.mem = nil
	return nil
}

// Len returns the number of bytes written.
func (b *RewindBuffer) Len() int64 { return b.size }

// Spilled reports whether the body lives in a temporary file.
func (b *RewindBuffer) Spilled() bool { return b.file != nil }

// Bytes returns the body if it is held in memory (the slice must not be
// modified, and is valid only until Close), or nil, false if it spilled
// to disk or the buffer is closed.
func (b *RewindBuffer) Bytes() ([]byte, bool) {
	if b.file != nil || b.closed {
		return nil, false
	}
	return b.mem, true
}

// NewReader returns an independent reader positioned at the start of the
// body. Readers share no state; each may also Seek and ReadAt. Once the
// buffer is closed its readers return ErrBufferClosed.
func (b *RewindBuffer) NewReader() *io.SectionReader {
	if b.closed {
		return io.NewSectionReader((*bufferAt)(b), 0, 1)
	}
	return io.NewSectionReader((*bufferAt)(b), 0, b.size)
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
	bodies.put(b.mem)
	b.mem = nil
	if b.file != nil {
		return b.file.f.Close()
	}
	return nil
}

// bufferAt reads a RewindBuffer's body until it is closed (a conversion:
// NewReader allocates only the SectionReader).
type bufferAt RewindBuffer

func (v *bufferAt) ReadAt(p []byte, off int64) (int, error) {
	b := (*RewindBuffer)(v)
	switch {
	case b.closed:
		return 0, ErrBufferClosed
	case b.file != nil:
		return b.file.f.ReadAt(p, off)
	case off >= int64(len(b.mem)):
		return 0, io.EOF
	}
	n := copy(p, b.mem[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
