package due

import (
	"errors"
	"reflect"
	"slices"
	"testing"
)

func FuzzDecodeManifest(f *testing.F) {
	m := manifest{nextFile: 9, logFloor: 7, nextSeq: 3, delivered: 2,
		runs: []runMeta{{1, 100, 800}, {5, 10, 90}}, pending: []batchMeta{{2, 6, 4}}}
	f.Add(m.encode())
	f.Add([]byte(manifestMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		m2, err := decodeManifest(m.encode())
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip: %v %+v %+v", err, m, m2)
		}
	})
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add(encodeBatch(3, []Entry{{FP: 1, URL: "http://a.test/x"}, {FP: 2, URL: "http://a.test/y", Depth: 3},
		{FP: 3, URL: "http://b.test/", Depth: 65535}}), uint64(3), uint64(3))
	f.Add(encodeBatch(1, nil), uint64(1), uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, seq, n uint64) {
		urls, err := decodeBatch(b, seq, n)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		u2, err := decodeBatch(encodeBatch(seq, urls), seq, n)
		if err != nil || !slices.Equal(u2, urls) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzLogRecords(f *testing.F) {
	var c chunk
	c.reset()
	c.add(&Entry{FP: 7, URL: "http://a.test/"})
	c.add(&Entry{FP: 9, URL: "", Depth: 300, SeenOnly: true})
	f.Add(c.buf[chunkHeaderLen:])
	f.Fuzz(func(t *testing.T, p []byte) {
		var re chunk
		re.reset()
		var es []Entry
		err := eachRecord(p, func(r *record) error {
			e := Entry{FP: r.fp, URL: string(r.url), Depth: r.depth, SeenOnly: r.seenOnly}
			es = append(es, e)
			re.add(&e)
			return nil
		})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		var n int
		err = eachRecord(re.buf[chunkHeaderLen:], func(r *record) error {
			if n >= len(es) || (Entry{FP: r.fp, URL: string(r.url), Depth: r.depth, SeenOnly: r.seenOnly}) != es[n] {
				t.Fatalf("round trip: record %d differs", n)
			}
			n++
			return nil
		})
		if err != nil || n != re.n {
			t.Fatalf("round trip: %v, %d of %d records", err, n, re.n)
		}
	})
}
