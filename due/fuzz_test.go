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
	f.Add(encodeBatch(3, []string{"http://a.test/x", "http://a.test/y", "http://b.test/"}), uint64(3), uint64(3))
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
	c.add(7, "http://a.test/")
	c.add(9, "")
	f.Add(c.buf[chunkHeaderLen:])
	f.Fuzz(func(t *testing.T, p []byte) {
		var re chunk
		re.reset()
		err := eachRecord(p, func(fp uint64, url []byte) error {
			re.add(fp, string(url))
			return nil
		})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		var n int
		if err := eachRecord(re.buf[chunkHeaderLen:], func(uint64, []byte) error { n++; return nil }); err != nil || n != re.n {
			t.Fatalf("round trip: %v, %d of %d records", err, n, re.n)
		}
	})
}
