package due

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The MANIFEST names the live files. It is replaced atomically (write a
// temporary file, fsync, rename, fsync the directory); its rename is the
// commit point of every merge and every recorded delivery.
//
//	"SXDUEMF1" | uvarints: nextFile logFloor nextSeq delivered
//	           | nruns (num count size)… | npending (seq num count)…
//	           | u32 CRC-32C of all preceding bytes
const (
	manifestMagic = "SXDUEMF2"
	batchMagic    = "SXDUEBT2"
	// manifestMagicV1 marks a directory written before log records and
	// batches carried depth and the seen-only flag.
	manifestMagicV1 = "SXDUEMF1"
	manifestName    = "MANIFEST"
	lockName        = "LOCK"
)

type runMeta struct {
	num, count uint64
	size       int64
}

type batchMeta struct {
	seq, num, count uint64
}

type manifest struct {
	nextFile  uint64 // next file number to allocate
	logFloor  uint64 // logs numbered ≥ logFloor hold the unmerged buffer
	nextSeq   uint64 // sequence number of the next batch (first is 1)
	delivered uint64 // last seq whose Deliver returned nil
	runs      []runMeta
	pending   []batchMeta
}

func (m *manifest) clone() manifest {
	c := *m
	c.runs = append([]runMeta(nil), m.runs...)
	c.pending = append([]batchMeta(nil), m.pending...)
	return c
}

func (m *manifest) encode() []byte {
	b := []byte(manifestMagic)
	for _, v := range []uint64{m.nextFile, m.logFloor, m.nextSeq, m.delivered, uint64(len(m.runs))} {
		b = binary.AppendUvarint(b, v)
	}
	for _, r := range m.runs {
		b = binary.AppendUvarint(b, r.num)
		b = binary.AppendUvarint(b, r.count)
		b = binary.AppendUvarint(b, uint64(r.size))
	}
	b = binary.AppendUvarint(b, uint64(len(m.pending)))
	for _, p := range m.pending {
		b = binary.AppendUvarint(b, p.seq)
		b = binary.AppendUvarint(b, p.num)
		b = binary.AppendUvarint(b, p.count)
	}
	return binary.LittleEndian.AppendUint32(b, crc(b))
}

func decodeManifest(b []byte) (manifest, error) {
	var m manifest
	bad := func(what string) (manifest, error) {
		return manifest{}, fmt.Errorf("%w: manifest %s", ErrCorrupt, what)
	}
	if len(b) >= len(manifestMagicV1) && string(b[:len(manifestMagicV1)]) == manifestMagicV1 {
		return manifest{}, fmt.Errorf("%w: manifest of format 1 (logs without depth); this version reads format 2 only: start from an empty directory", ErrCorrupt)
	}
	if len(b) < len(manifestMagic)+4 || string(b[:len(manifestMagic)]) != manifestMagic {
		return bad("magic")
	}
	body := b[:len(b)-4]
	if crc(body) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return bad("checksum")
	}
	p := body[len(manifestMagic):]
	fail := false
	next := func() uint64 {
		v, k := binary.Uvarint(p)
		if k <= 0 {
			fail = true
			return 0
		}
		p = p[k:]
		return v
	}
	m.nextFile, m.logFloor, m.nextSeq, m.delivered = next(), next(), next(), next()
	nr := next()
	if nr > uint64(len(p)) {
		return bad("run count")
	}
	for i := uint64(0); i < nr && !fail; i++ {
		m.runs = append(m.runs, runMeta{num: next(), count: next(), size: int64(next())})
	}
	np := next()
	if np > uint64(len(p)) {
		return bad("batch count")
	}
	for i := uint64(0); i < np && !fail; i++ {
		m.pending = append(m.pending, batchMeta{seq: next(), num: next(), count: next()})
	}
	if fail || len(p) != 0 {
		return bad("encoding")
	}
	return m, nil
}

// writeFileAtomic writes data to dir/name via a temporary file, fsyncs it,
// renames it into place and fsyncs the directory.
func writeFileAtomic(fs vfs.FS, dir, name string, data []byte) error {
	tmp := fs.PathJoin(dir, name+".tmp")
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, fs.PathJoin(dir, name))
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	return err
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// encodeBatch encodes a delivery batch: the URLs in arrival order, each
// front-coded against the previous one, with fingerprint and depth.
//
//	"SXDUEBT2" | u64 seq | uvarint n | (u64 fp, uvarint depth, uvarint shared, uvarint len, bytes)…
//	| u32 CRC-32C of all preceding bytes
func encodeBatch(seq uint64, urls []Entry) []byte {
	b := []byte(batchMagic)
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = binary.AppendUvarint(b, uint64(len(urls)))
	prev := ""
	for i := range urls {
		e := &urls[i]
		u := e.URL
		b = binary.LittleEndian.AppendUint64(b, e.FP)
		b = binary.AppendUvarint(b, uint64(e.Depth))
		s := 0
		for s < len(u) && s < len(prev) && u[s] == prev[s] {
			s++
		}
		b = binary.AppendUvarint(b, uint64(s))
		b = binary.AppendUvarint(b, uint64(len(u)-s))
		b = append(b, u[s:]...)
		prev = u
	}
	return binary.LittleEndian.AppendUint32(b, crc(b))
}

func decodeBatch(b []byte, wantSeq, wantCount uint64) ([]Entry, error) {
	bad := func(what string) ([]Entry, error) {
		return nil, fmt.Errorf("%w: batch %d %s", ErrCorrupt, wantSeq, what)
	}
	if len(b) < len(batchMagic)+12 || string(b[:len(batchMagic)]) != batchMagic {
		return bad("magic")
	}
	body := b[:len(b)-4]
	if crc(body) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return bad("checksum")
	}
	p := body[len(batchMagic):]
	if binary.LittleEndian.Uint64(p) != wantSeq {
		return bad("sequence number")
	}
	p = p[8:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n != wantCount || n > uint64(len(p)) {
		return bad("count")
	}
	p = p[k:]
	urls := make([]Entry, 0, n)
	var prev []byte
	for i := uint64(0); i < n; i++ {
		if len(p) < 8 {
			return bad("entry")
		}
		fp := binary.LittleEndian.Uint64(p)
		p = p[8:]
		depth, k0 := binary.Uvarint(p)
		if k0 <= 0 || depth > math.MaxUint16 {
			return bad("entry")
		}
		p = p[k0:]
		s, k1 := binary.Uvarint(p)
		if k1 <= 0 || s > uint64(len(prev)) {
			return bad("entry")
		}
		p = p[k1:]
		l, k2 := binary.Uvarint(p)
		if k2 <= 0 || l > uint64(len(p)-k2) {
			return bad("entry")
		}
		p = p[k2:]
		u := make([]byte, 0, int(s+l))
		u = append(append(u, prev[:s]...), p[:l]...)
		p = p[l:]
		urls = append(urls, Entry{FP: fp, URL: string(u), Depth: uint16(depth)})
		prev = u
	}
	if len(p) != 0 {
		return bad("trailing bytes")
	}
	return urls, nil
}
