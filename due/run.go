package due

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A run file holds one sorted, duplicate-free set of fingerprints:
//
//	"SXDUERN1" | block… | index | footer
//	index  = per block: u64 first value | u64 file offset | u32 count
//	footer = u64 index offset | u64 blocks | u64 values | u32 CRC-32C of
//	         (index ‖ first 24 footer bytes) | "SXDR"
//
// The index (20 bytes per block, ≈0.01 byte per fingerprint) is held in
// memory; blocks are read and checksummed on every merge.
const (
	runMagic    = "SXDUERN1"
	footerMagic = "SXDR"
	footerLen   = 32
	indexEntLen = 20
)

type blockRef struct {
	first uint64
	off   int64
	n     uint32
}

// runWriter writes a run file. Values must be added strictly increasing.
type runWriter struct {
	f       vfs.File
	bw      *bufio.Writer
	off     int64
	per     int
	pend    []uint64
	enc     []byte
	index   []blockRef
	count   uint64
	last    uint64
	started bool
}

// runBufSize is the run writer's buffer size.
const runBufSize = 1 << 20

// createRun creates a run file at path, writing through bw (reset to the
// file; nil: a new buffer).
func createRun(fs vfs.FS, path string, blockEntries int, bw *bufio.Writer) (*runWriter, error) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	if bw == nil {
		bw = bufio.NewWriterSize(f, runBufSize)
	} else {
		bw.Reset(f)
	}
	w := &runWriter{f: f, bw: bw, per: blockEntries}
	w.pend = make([]uint64, 0, blockEntries)
	_, err = w.bw.WriteString(runMagic)
	w.off = int64(len(runMagic))
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func (w *runWriter) add(v uint64) error {
	if w.started && v <= w.last {
		panic(fmt.Sprintf("due: run values not increasing: %#x after %#x", v, w.last))
	}
	w.started, w.last = true, v
	w.pend = append(w.pend, v)
	w.count++
	if len(w.pend) == w.per {
		return w.flushBlock()
	}
	return nil
}

func (w *runWriter) flushBlock() error {
	if len(w.pend) == 0 {
		return nil
	}
	w.enc = appendBlock(w.enc[:0], w.pend)
	w.index = append(w.index, blockRef{first: w.pend[0], off: w.off, n: uint32(len(w.pend))})
	w.pend = w.pend[:0]
	n, err := w.bw.Write(w.enc)
	w.off += int64(n)
	return err
}

// finish writes the index and footer, fsyncs and closes the file, and
// returns its size.
func (w *runWriter) finish() (int64, error) {
	err := w.flushBlock()
	var tail []byte
	for _, b := range w.index {
		tail = binary.LittleEndian.AppendUint64(tail, b.first)
		tail = binary.LittleEndian.AppendUint64(tail, uint64(b.off))
		tail = binary.LittleEndian.AppendUint32(tail, b.n)
	}
	tail = binary.LittleEndian.AppendUint64(tail, uint64(w.off))
	tail = binary.LittleEndian.AppendUint64(tail, uint64(len(w.index)))
	tail = binary.LittleEndian.AppendUint64(tail, w.count)
	tail = binary.LittleEndian.AppendUint32(tail, crc(tail))
	tail = append(tail, footerMagic...)
	if err == nil {
		_, err = w.bw.Write(tail)
	}
	if err == nil {
		err = w.bw.Flush()
	}
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return w.off + int64(len(tail)), err
}

// abort closes the file after a failure; the caller removes it.
func (w *runWriter) abort() { w.f.Close() }

// run is an open run file with its block index in memory.
type run struct {
	num      uint64
	f        vfs.File
	size     int64
	count    uint64
	indexOff int64
	blocks   []blockRef
}

// openRun opens a run and checks its footer and index against the counts the
// manifest recorded.
func openRun(fs vfs.FS, path string, num, wantCount uint64, wantSize int64) (*run, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("due: open run %s: %w", path, err)
	}
	r, err := readRunIndex(f, num, wantCount, wantSize)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("run %s: %w", path, err)
	}
	return r, nil
}

func readRunIndex(f vfs.File, num, wantCount uint64, wantSize int64) (*run, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size != wantSize {
		return nil, fmt.Errorf("%w: size %d, manifest says %d", ErrCorrupt, size, wantSize)
	}
	if size < int64(len(runMagic)+footerLen) {
		return nil, fmt.Errorf("%w: too short", ErrCorrupt)
	}
	head := make([]byte, len(runMagic))
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, err
	}
	if string(head) != runMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	foot := make([]byte, footerLen)
	if _, err := f.ReadAt(foot, size-footerLen); err != nil {
		return nil, err
	}
	if string(foot[28:]) != footerMagic {
		return nil, fmt.Errorf("%w: bad footer magic", ErrCorrupt)
	}
	indexOff := int64(binary.LittleEndian.Uint64(foot))
	nb := binary.LittleEndian.Uint64(foot[8:])
	count := binary.LittleEndian.Uint64(foot[16:])
	if indexOff < int64(len(runMagic)) || nb > uint64(size)/indexEntLen ||
		indexOff+int64(nb)*indexEntLen != size-footerLen {
		return nil, fmt.Errorf("%w: bad footer", ErrCorrupt)
	}
	tail := make([]byte, int64(nb)*indexEntLen+24)
	if _, err := f.ReadAt(tail, indexOff); err != nil && err != io.EOF {
		return nil, err
	}
	if crc(tail) != binary.LittleEndian.Uint32(foot[24:]) {
		return nil, fmt.Errorf("%w: index checksum", ErrCorrupt)
	}
	if count != wantCount {
		return nil, fmt.Errorf("%w: %d values, manifest says %d", ErrCorrupt, count, wantCount)
	}
	r := &run{num: num, f: f, size: size, count: count, indexOff: indexOff}
	r.blocks = make([]blockRef, nb)
	var sum uint64
	for i := range r.blocks {
		e := tail[i*indexEntLen:]
		b := blockRef{
			first: binary.LittleEndian.Uint64(e),
			off:   int64(binary.LittleEndian.Uint64(e[8:])),
			n:     binary.LittleEndian.Uint32(e[16:]),
		}
		okOff := b.off < indexOff && (i == 0 && b.off == int64(len(runMagic)) ||
			i > 0 && b.off > r.blocks[i-1].off)
		if !okOff || b.n == 0 || b.n > maxBlockEntries || (i > 0 && b.first <= r.blocks[i-1].first) {
			return nil, fmt.Errorf("%w: bad index entry %d", ErrCorrupt, i)
		}
		r.blocks[i] = b
		sum += uint64(b.n)
	}
	if sum != count {
		return nil, fmt.Errorf("%w: index counts %d values, footer %d", ErrCorrupt, sum, count)
	}
	return r, nil
}

func (r *run) blockEnd(i int) int64 {
	if i+1 < len(r.blocks) {
		return r.blocks[i+1].off
	}
	return r.indexOff
}

// blockReader reads and decodes blocks of runs, reusing its buffers. Not
// safe for concurrent use.
type blockReader struct {
	raw  []byte
	vals []uint64
	dc   decoder
}

// read returns block i of r; the slice is valid until the next call.
func (br *blockReader) read(r *run, i int) ([]uint64, error) {
	b := r.blocks[i]
	n := int(r.blockEnd(i) - b.off)
	if n <= 0 || n > 64<<20 {
		return nil, fmt.Errorf("%w: run %06d block %d length %d", ErrCorrupt, r.num, i, n)
	}
	if cap(br.raw) < n {
		br.raw = make([]byte, n)
	}
	raw := br.raw[:n]
	if _, err := r.f.ReadAt(raw, b.off); err != nil {
		return nil, fmt.Errorf("due: run %06d block %d: %w", r.num, i, err)
	}
	vals, err := br.dc.decode(br.vals, raw)
	br.vals = vals
	if err != nil {
		return nil, fmt.Errorf("run %06d block %d: %w", r.num, i, err)
	}
	if len(vals) != int(b.n) || vals[0] != b.first {
		return nil, fmt.Errorf("%w: run %06d block %d disagrees with index", ErrCorrupt, r.num, i)
	}
	if i+1 < len(r.blocks) && vals[len(vals)-1] >= r.blocks[i+1].first {
		return nil, fmt.Errorf("%w: run %06d block %d overlaps the next", ErrCorrupt, r.num, i)
	}
	return vals, nil
}

// markFound sets found[j] for every q[j] (sorted ascending) present in r.
// Blocks whose key range holds no query are skipped unread.
func (r *run) markFound(br *blockReader, q []uint64, found []bool) error {
	j := 0
	for i := range r.blocks {
		lo := r.blocks[i].first
		for j < len(q) && q[j] < lo {
			j++
		}
		if j == len(q) {
			return nil
		}
		hiOK := i+1 < len(r.blocks)
		var hi uint64
		if hiOK {
			hi = r.blocks[i+1].first
			if q[j] >= hi {
				continue
			}
		}
		vals, err := br.read(r, i)
		if err != nil {
			return err
		}
		k := 0
		for j < len(q) && (!hiOK || q[j] < hi) {
			for k < len(vals) && vals[k] < q[j] {
				k++
			}
			if k < len(vals) && vals[k] == q[j] {
				found[j] = true
			}
			j++
		}
	}
	return nil
}

// runIter walks all values of a run in order.
type runIter struct {
	r    *run
	br   blockReader
	bi   int
	vals []uint64
	pos  int
}

func (it *runIter) next() (uint64, bool, error) {
	for it.pos == len(it.vals) {
		if it.bi == len(it.r.blocks) {
			return 0, false, nil
		}
		vals, err := it.br.read(it.r, it.bi)
		if err != nil {
			return 0, false, err
		}
		it.vals, it.pos = vals, 0
		it.bi++
	}
	v := it.vals[it.pos]
	it.pos++
	return v, true, nil
}

// verify reads and checks every block of r.
func (r *run) verify() error {
	it := runIter{r: r}
	var n uint64
	for {
		_, ok, err := it.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		n++
	}
	if n != r.count {
		return fmt.Errorf("%w: run %06d holds %d values, want %d", ErrCorrupt, r.num, n, r.count)
	}
	return nil
}
