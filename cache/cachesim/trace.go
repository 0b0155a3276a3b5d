package cachesim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// Trace file format, version 1. All integers are little-endian.
//
//	header  8 bytes: "SXTR", version (1), flags, 2 zero bytes
//	block   12-byte block header: records n (1…MaxTraceBlock), payload
//	        length p, CRC-32C of the payload; then p bytes of payload
//	...
//	trailer 4 zero bytes (a block of 0 records), then the total record count
//	        as 8 bytes; then end of file
//
// Flags: bit 0 (TraceWorkerTags) — each record carries a uint16 worker id;
// bit 1 (TraceZstd) — payloads are zstd frames. The raw payload of a block
// is the n fingerprints as 8-byte words, followed by n 2-byte worker ids when
// bit 0 is set. Other flag bits must be zero. A reader knows the count only at
// the trailer, which lets a writer stream to a pipe; a file without its
// trailer is reported as truncated.
const (
	traceMagic      = "SXTR"
	traceVersion    = 1
	TraceWorkerTags = 1 << 0
	TraceZstd       = 1 << 1
	traceKnownFlags = TraceWorkerTags | TraceZstd
	// MaxTraceBlock is the most records in one block.
	MaxTraceBlock = 1 << 16
	traceHeader   = 8
	blockHeader   = 12
	maxPayload    = MaxTraceBlock*10 + 1<<12
)

// Trace errors. Every error a reader returns for a bad file wraps one of
// these and names the byte offset.
var (
	ErrBadTrace       = errors.New("cachesim: malformed trace")
	ErrTruncatedTrace = errors.New("cachesim: truncated trace")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// TraceOptions choose the optional parts of a trace.
type TraceOptions struct {
	// WorkerTags stores a worker id with every record (AddTagged).
	WorkerTags bool
	// NoCompression writes raw payloads (default: zstd).
	NoCompression bool
}

// TraceWriter writes a trace. Not safe for concurrent use; Close must be
// called to write the trailer (it does not close the underlying writer).
type TraceWriter struct {
	w     *bufio.Writer
	flags byte
	fps   []uint64
	tags  []uint16
	raw   []byte
	buf   []byte
	enc   *zstd.Encoder
	total uint64
	err   error
}

// NewTraceWriter starts a zstd-compressed trace without worker tags on w.
func NewTraceWriter(w io.Writer) (*TraceWriter, error) {
	return NewTraceWriterOptions(w, TraceOptions{})
}

// NewTraceWriterOptions starts a trace on w and writes its header.
func NewTraceWriterOptions(w io.Writer, o TraceOptions) (*TraceWriter, error) {
	tw := &TraceWriter{w: bufio.NewWriterSize(w, 1<<16), fps: make([]uint64, 0, MaxTraceBlock)}
	if o.WorkerTags {
		tw.flags |= TraceWorkerTags
		tw.tags = make([]uint16, 0, MaxTraceBlock)
	}
	if !o.NoCompression {
		tw.flags |= TraceZstd
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		tw.enc = enc
	}
	h := []byte{traceMagic[0], traceMagic[1], traceMagic[2], traceMagic[3], traceVersion, tw.flags, 0, 0}
	if _, err := tw.w.Write(h); err != nil {
		return nil, err
	}
	return tw, nil
}

// Add appends one fingerprint (worker 0 if the trace has worker tags).
func (tw *TraceWriter) Add(fp uint64) error { return tw.AddTagged(fp, 0) }

// AddTagged appends one fingerprint requested by worker; the worker is
// dropped unless the trace was made with WorkerTags.
func (tw *TraceWriter) AddTagged(fp uint64, worker uint16) error {
	if tw.err != nil {
		return tw.err
	}
	tw.fps = append(tw.fps, fp)
	if tw.tags != nil {
		tw.tags = append(tw.tags, worker)
	}
	tw.total++
	if len(tw.fps) == MaxTraceBlock {
		tw.err = tw.flush()
	}
	return tw.err
}

// Count is the number of records added so far.
func (tw *TraceWriter) Count() uint64 { return tw.total }

func (tw *TraceWriter) flush() error {
	n := len(tw.fps)
	if n == 0 {
		return nil
	}
	raw := tw.raw[:0]
	for _, fp := range tw.fps {
		raw = binary.LittleEndian.AppendUint64(raw, fp)
	}
	for _, t := range tw.tags {
		raw = binary.LittleEndian.AppendUint16(raw, t)
	}
	tw.raw = raw
	payload := raw
	if tw.enc != nil {
		tw.buf = tw.enc.EncodeAll(raw, tw.buf[:0])
		payload = tw.buf
	}
	var h [blockHeader]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(n))
	binary.LittleEndian.PutUint32(h[4:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(payload, castagnoli))
	if _, err := tw.w.Write(h[:]); err != nil {
		return err
	}
	if _, err := tw.w.Write(payload); err != nil {
		return err
	}
	tw.fps = tw.fps[:0]
	if tw.tags != nil {
		tw.tags = tw.tags[:0]
	}
	return nil
}

// Close writes the last block and the trailer and flushes.
func (tw *TraceWriter) Close() error {
	if tw.err != nil {
		return tw.err
	}
	if tw.err = tw.flush(); tw.err != nil {
		return tw.err
	}
	var t [12]byte
	binary.LittleEndian.PutUint64(t[4:], tw.total)
	if _, tw.err = tw.w.Write(t[:]); tw.err != nil {
		return tw.err
	}
	tw.err = tw.w.Flush()
	if tw.enc != nil {
		_ = tw.enc.Close()
	}
	if tw.err == nil {
		tw.err = errors.New("cachesim: trace writer closed")
		return nil
	}
	return tw.err
}

// TraceReader reads a trace written by TraceWriter. Not safe for concurrent
// use.
type TraceReader struct {
	r     *bufio.Reader
	off   int64 // bytes consumed
	flags byte
	dec   *zstd.Decoder
	raw   []byte
	comp  []byte
	fps   []uint64
	tags  []uint16
	pos   int
	total uint64
	done  bool
}

// NewTraceReader reads the header of a trace from r.
func NewTraceReader(r io.Reader) (*TraceReader, error) {
	tr := &TraceReader{r: bufio.NewReaderSize(r, 1<<16)}
	var h [traceHeader]byte
	if err := tr.full(h[:]); err != nil {
		return nil, err
	}
	if string(h[:4]) != traceMagic {
		return nil, fmt.Errorf("%w: at byte offset 0: bad magic %q", ErrBadTrace, h[:4])
	}
	if h[4] != traceVersion {
		return nil, fmt.Errorf("%w: at byte offset 4: unsupported version %d", ErrBadTrace, h[4])
	}
	if h[5]&^traceKnownFlags != 0 || h[6] != 0 || h[7] != 0 {
		return nil, fmt.Errorf("%w: at byte offset 5: unknown flags %#x %#x %#x", ErrBadTrace, h[5], h[6], h[7])
	}
	tr.flags = h[5]
	if tr.flags&TraceZstd != 0 {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxPayload))
		if err != nil {
			return nil, err
		}
		tr.dec = dec
	}
	return tr, nil
}

// WorkerTags reports whether records carry worker ids.
func (tr *TraceReader) WorkerTags() bool { return tr.flags&TraceWorkerTags != 0 }

// full reads len(b) bytes or reports truncation at the offset where the data
// ran out.
func (tr *TraceReader) full(b []byte) error {
	n, err := io.ReadFull(tr.r, b)
	tr.off += int64(n)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: at byte offset %d: want %d more bytes", ErrTruncatedTrace, tr.off, len(b)-n)
	}
	return err
}

// Next returns the next fingerprint and its worker id (0 without tags), or
// io.EOF after the trailer has been read and checked.
func (tr *TraceReader) Next() (fp uint64, worker uint16, err error) {
	for tr.pos == len(tr.fps) {
		if tr.done {
			return 0, 0, io.EOF
		}
		if err := tr.block(); err != nil {
			return 0, 0, err
		}
	}
	fp = tr.fps[tr.pos]
	if tr.tags != nil {
		worker = tr.tags[tr.pos]
	}
	tr.pos++
	return fp, worker, nil
}

// block reads the next block or the trailer.
func (tr *TraceReader) block() error {
	at := tr.off
	var h [blockHeader]byte
	if err := tr.full(h[:4]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(h[0:])
	if n == 0 {
		return tr.trailer(at)
	}
	if err := tr.full(h[4:]); err != nil {
		return err
	}
	p := binary.LittleEndian.Uint32(h[4:])
	if n > MaxTraceBlock {
		return fmt.Errorf("%w: at byte offset %d: block of %d records (max %d)", ErrBadTrace, at, n, MaxTraceBlock)
	}
	if p > maxPayload {
		return fmt.Errorf("%w: at byte offset %d: payload of %d bytes (max %d)", ErrBadTrace, at+4, p, maxPayload)
	}
	if cap(tr.comp) < int(p) {
		tr.comp = make([]byte, p)
	}
	payload := tr.comp[:p]
	pat := tr.off
	if err := tr.full(payload); err != nil {
		return err
	}
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(h[8:]) {
		return fmt.Errorf("%w: at byte offset %d: checksum mismatch in block", ErrBadTrace, pat)
	}
	want := int(n) * 8
	if tr.WorkerTags() {
		want += int(n) * 2
	}
	raw := payload
	if tr.dec != nil {
		var err error
		tr.raw, err = tr.dec.DecodeAll(payload, tr.raw[:0])
		if err != nil {
			return fmt.Errorf("%w: at byte offset %d: %v", ErrBadTrace, pat, err)
		}
		raw = tr.raw
	}
	if len(raw) != want {
		return fmt.Errorf("%w: at byte offset %d: block holds %d bytes, want %d for %d records", ErrBadTrace, pat, len(raw), want, n)
	}
	tr.fps = tr.fps[:0]
	for i := 0; i < int(n); i++ {
		tr.fps = append(tr.fps, binary.LittleEndian.Uint64(raw[8*i:]))
	}
	tr.tags = nil
	if tr.WorkerTags() {
		tr.tags = make([]uint16, n)
		for i := range tr.tags {
			tr.tags[i] = binary.LittleEndian.Uint16(raw[8*int(n)+2*i:])
		}
	}
	tr.pos = 0
	tr.total += uint64(n)
	return nil
}

func (tr *TraceReader) trailer(at int64) error {
	var c [8]byte
	if err := tr.full(c[:]); err != nil {
		return err
	}
	if got := binary.LittleEndian.Uint64(c[:]); got != tr.total {
		return fmt.Errorf("%w: at byte offset %d: trailer counts %d records, blocks held %d", ErrBadTrace, at+4, got, tr.total)
	}
	if _, err := tr.r.ReadByte(); err != io.EOF {
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: at byte offset %d: data after the trailer", ErrBadTrace, tr.off)
	}
	tr.done = true
	tr.fps, tr.pos = tr.fps[:0], 0
	return nil
}

// ReadAll appends every remaining fingerprint to dst.
func (tr *TraceReader) ReadAll(dst []uint64) ([]uint64, error) {
	for {
		if tr.pos < len(tr.fps) {
			dst = append(dst, tr.fps[tr.pos:]...)
			tr.pos = len(tr.fps)
		}
		if tr.done {
			return dst, nil
		}
		if err := tr.block(); err != nil {
			return dst, err
		}
	}
}

// Close releases the decoder.
func (tr *TraceReader) Close() error {
	if tr.dec != nil {
		tr.dec.Close()
	}
	return nil
}

// trailerCount peeks at the record count in the trailer of a seekable trace
// to size the result; the reader checks it again at the end. It returns 0 if
// the count is unavailable or implausible for the file's size.
func trailerCount(f *os.File) int {
	st, err := f.Stat()
	if err != nil || st.Size() < traceHeader+12 {
		return 0
	}
	var c [8]byte
	if _, err := f.ReadAt(c[:], st.Size()-8); err != nil {
		return 0
	}
	n := binary.LittleEndian.Uint64(c[:])
	// A zstd block of 8-byte records shrinks at most ~1000×; cap anyway.
	if n > 1<<32 || n > uint64(st.Size())*128 {
		return 0
	}
	return int(n)
}

// ReadTraceFile reads every fingerprint of the trace file at path.
func ReadTraceFile(path string) ([]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := NewTraceReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer tr.Close()
	fps, err := tr.ReadAll(make([]uint64, 0, trailerCount(f)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return fps, nil
}

// FingerprintURLs reads text with one normalised URL per line (blank lines
// and lines starting with # are skipped) and returns their fingerprints.
func FingerprintURLs(r io.Reader) ([]uint64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []uint64
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		out = append(out, fingerprint.URL(line))
	}
	return out, sc.Err()
}
