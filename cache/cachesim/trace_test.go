package cachesim

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/cache/tracegen"
)

func writeTrace(t testing.TB, fps []uint64, tags []uint16, o TraceOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewTraceWriterOptions(&buf, o)
	if err != nil {
		t.Fatal(err)
	}
	for i, fp := range fps {
		var tag uint16
		if tags != nil {
			tag = tags[i]
		}
		if err := w.AddTagged(fp, tag); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Count() != uint64(len(fps)) {
		t.Fatalf("Count = %d, want %d", w.Count(), len(fps))
	}
	return buf.Bytes()
}

func TestTraceRoundTrip(t *testing.T) {
	fps, _ := tracegen.Generate(tracegen.Options{Seed: 7}, 3*MaxTraceBlock+17)
	tags := make([]uint16, len(fps))
	for i := range tags {
		tags[i] = uint16(i % 500)
	}
	for _, c := range []struct {
		name string
		n    int
		o    TraceOptions
	}{
		{"zstd", len(fps), TraceOptions{}},
		{"raw", len(fps), TraceOptions{NoCompression: true}},
		{"tagged", len(fps), TraceOptions{WorkerTags: true}},
		{"empty", 0, TraceOptions{}},
		{"one-block", MaxTraceBlock, TraceOptions{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := fps[:c.n]
			var tg []uint16
			if c.o.WorkerTags {
				tg = tags[:c.n]
			}
			data := writeTrace(t, in, tg, c.o)
			t.Logf("%d records, %d bytes (%.2f bytes/record)", c.n, len(data), float64(len(data))/float64(max(c.n, 1)))
			r, err := NewTraceReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if r.WorkerTags() != c.o.WorkerTags {
				t.Fatal("worker tag flag lost")
			}
			for i := range in {
				fp, w, err := r.Next()
				if err != nil || fp != in[i] || (tg != nil && w != tg[i]) {
					t.Fatalf("record %d: %#x %d %v, want %#x", i, fp, w, err, in[i])
				}
			}
			if _, _, err := r.Next(); err != io.EOF {
				t.Fatalf("after the last record: %v, want EOF", err)
			}
			r2, _ := NewTraceReader(bytes.NewReader(data))
			all, err := r2.ReadAll(nil)
			if err != nil || !slices.Equal(all, in) {
				t.Fatalf("ReadAll: %d records, %v", len(all), err)
			}
		})
	}
}

func TestReadTraceFile(t *testing.T) {
	fps := []uint64{1, 2, 3, 0, ^uint64(0)}
	path := filepath.Join(t.TempDir(), "t.sxt")
	if err := os.WriteFile(path, writeTrace(t, fps, nil, TraceOptions{}), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTraceFile(path)
	if err != nil || !slices.Equal(got, fps) {
		t.Fatalf("ReadTraceFile = %v, %v", got, err)
	}
	if _, err := ReadTraceFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file read")
	}
}

// Every proper prefix of a trace is reported as truncated, naming an offset
// no larger than the prefix.
func TestTruncatedTraceNamesOffset(t *testing.T) {
	fps, _ := tracegen.Generate(tracegen.Options{Seed: 9}, MaxTraceBlock+100)
	for _, o := range []TraceOptions{{}, {NoCompression: true, WorkerTags: true}} {
		data := writeTrace(t, fps, make([]uint16, len(fps)), o)
		r := rand.New(rand.NewPCG(1, 1))
		cuts := []int{0, 3, 8, 9, 12, 19, 20, 21, len(data) - 1, len(data) - 8, len(data) - 12}
		for range 40 {
			cuts = append(cuts, r.IntN(len(data)))
		}
		for _, cut := range cuts {
			rd, err := NewTraceReader(bytes.NewReader(data[:cut]))
			if err == nil {
				_, err = rd.ReadAll(nil)
			}
			if !errors.Is(err, ErrTruncatedTrace) || !strings.Contains(err.Error(), "byte offset") {
				t.Fatalf("cut at %d of %d: err = %v", cut, len(data), err)
			}
		}
	}
}

func TestMalformedTrace(t *testing.T) {
	good := writeTrace(t, []uint64{10, 20, 30}, nil, TraceOptions{})
	mut := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	for _, c := range []struct {
		name, want string
		data       []byte
	}{
		{"magic", "offset 0", mut(func(b []byte) []byte { b[0] = 'X'; return b })},
		{"version", "offset 4", mut(func(b []byte) []byte { b[4] = 9; return b })},
		{"flags", "offset 5", mut(func(b []byte) []byte { b[5] |= 0x80; return b })},
		{"count", "offset 8", mut(func(b []byte) []byte { b[11] = 0x7f; return b })},
		{"checksum", "offset 20", mut(func(b []byte) []byte { b[21] ^= 1; return b })},
		{"trailer count", "trailer", mut(func(b []byte) []byte { b[len(b)-8]++; return b })},
		{"trailing data", "after the trailer", append(slices.Clone(good), 0)},
	} {
		_, err := readAllBytes(c.data)
		if !errors.Is(err, ErrBadTrace) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrBadTrace mentioning %q", c.name, err, c.want)
		}
	}
}

func readAllBytes(data []byte) ([]uint64, error) {
	r, err := NewTraceReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadAll(nil)
}

func FuzzTraceReader(f *testing.F) {
	f.Add(writeTrace(f, []uint64{1, 2, 3}, nil, TraceOptions{}))
	f.Add(writeTrace(f, []uint64{1, 2, 3}, []uint16{4, 5, 6}, TraceOptions{WorkerTags: true, NoCompression: true}))
	f.Add(writeTrace(f, nil, nil, TraceOptions{}))
	f.Add([]byte("SXTR\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fps, err := readAllBytes(data)
		if err != nil {
			if !errors.Is(err, ErrBadTrace) && !errors.Is(err, ErrTruncatedTrace) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		// A trace that reads must round-trip.
		again, err := readAllBytes(writeTrace(t, fps, nil, TraceOptions{}))
		if err != nil || !slices.Equal(again, fps) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func TestFingerprintURLs(t *testing.T) {
	fps, err := FingerprintURLs(strings.NewReader("http://a.test/\n\n# comment\n  http://b.test/x  \r\nhttp://a.test/\n"))
	if err != nil || len(fps) != 3 || fps[0] != fps[2] || fps[0] == fps[1] {
		t.Fatalf("FingerprintURLs = %x, %v", fps, err)
	}
}
