package warc

import (
	"crypto/sha1"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// bufPool recycles the compressed records' buffers once written.
var bufPool sync.Pool // *[]byte

func getBuf() []byte {
	if p, ok := bufPool.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, 16<<10)
}

// release recycles j's buffers (after submit: the file has them).
func (j *job) release() {
	for i := range j.members {
		putBuf(j.members[i].gz)
		j.members[i].gz = nil
	}
}

func putBuf(b []byte) {
	if cap(b) <= 1<<20 { // keep huge ones out of the pool
		bufPool.Put(&b)
	}
}

// copyBufs are io.Copy's buffers: a SectionReader is no WriterTo, so
// io.Copy would allocate 32 KiB for every body read (twice per record).
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyBody copies all of body (from its start) to dst.
func copyBody(dst io.Writer, body *io.SectionReader) (int64, error) {
	b := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(b)
	return io.CopyBuffer(dst, io.NewSectionReader(body, 0, body.Size()), *b)
}

// gzPools keep one pool of gzip writers per level: a writer's allocation
// is ~800 KB, too much for every record.
var gzPools sync.Map // level -> *sync.Pool

func gzWriter(dst io.Writer, level int) *gzip.Writer {
	pl, _ := gzPools.LoadOrStore(level, &sync.Pool{})
	if z, ok := pl.(*sync.Pool).Get().(*gzip.Writer); ok {
		z.Reset(dst)
		return z
	}
	z, err := gzip.NewWriterLevel(dst, level)
	if err != nil {
		panic(err) // level was validated
	}
	return z
}

func putGz(z *gzip.Writer, level int) {
	pl, _ := gzPools.Load(level)
	pl.(*sync.Pool).Put(z)
}

// compress writes p as one gzip member to dst. The WARC header is built
// in one pooled slice and handed to the compressor with the HTTP head and
// the body: no bufio layer, no fmt (both showed in the crawl's profile).
func compress(dst io.Writer, p *pending, level int) error {
	z := gzWriter(dst, level)
	defer putGz(z, level)
	hp := headBufs.Get().(*[]byte)
	defer headBufs.Put(hp)
	h := append((*hp)[:0], "WARC/1.1\r\nWARC-Type: "...)
	h = append(append(h, p.typ...), "\r\nWARC-Record-ID: "...)
	h = append(append(h, p.id...), "\r\n"...)
	for _, f := range p.fields {
		h = append(append(append(append(h, f.Name...), ": "...), f.Value...), "\r\n"...)
	}
	h = append(append(h, "WARC-Block-Digest: "...), p.blockDigest...)
	h = append(h, "\r\nContent-Length: "...)
	h = strconv.AppendInt(h, int64(len(p.head))+p.body.Size(), 10)
	h = append(append(h, "\r\n\r\n"...), p.head...)
	*hp = h
	if _, err := z.Write(h); err != nil {
		return err
	}
	if _, err := copyBody(z, p.body); err != nil {
		return fmt.Errorf("warc: reading body: %w", err)
	}
	if _, err := z.Write([]byte("\r\n\r\n")); err != nil {
		return err
	}
	return z.Close()
}

// headBufs hold a record's WARC header and HTTP head while it is
// compressed.
var headBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// Digest returns "sha1:" and the base32 SHA-1 of all of body (from its
// start), as WARC-Payload-Digest writes it (a crawl log's digest= of a
// fetch not archived).
func Digest(body *io.SectionReader) (string, error) {
	h := sha1.New()
	if _, err := copyBody(h, body); err != nil {
		return "", fmt.Errorf("warc: reading body: %w", err)
	}
	return "sha1:" + b32.EncodeToString(h.Sum(nil)), nil
}
