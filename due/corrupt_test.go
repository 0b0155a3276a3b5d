package due

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// populated returns a MemFS holding a closed DUE with several runs, a
// pending (undelivered) batch and unmerged entries in the log.
func populated(t *testing.T) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	sink := &frontierSink{}
	d := openT(t, fs, sink, func(o *Options) { o.RunRatio = 1 }) // keep several runs
	s := newStream(5)
	for i := 0; i < 20000; i++ {
		u := s.next()
		if err := d.Add(fingerprint.URL(u), u); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	sink.fail = errors.New("down")
	for i := 0; i < 50; i++ {
		u := "http://pending.test/" + string(rune('a'+i%26)) + strings.Repeat("x", i)
		if err := d.Add(fingerprint.URL(u), u); err != nil {
			t.Fatal(err)
		}
	}
	_ = d.Flush() // commits a batch the sink refuses
	for i := 0; i < 30; i++ {
		u := "http://logged.test/" + strings.Repeat("y", i)
		if err := d.Add(fingerprint.URL(u), u); err != nil {
			t.Fatal(err)
		}
	}
	if st := d.Stats(); st.Runs < 2 || st.PendingBatches != 1 {
		t.Fatalf("setup: %+v", st)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return fs
}

func filesWith(t *testing.T, fs vfs.FS, ext string) []string {
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ext) {
			out = append(out, "db/"+n)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s files", ext)
	}
	return out
}

func mutate(t *testing.T, fs *vfs.MemFS, path string, f func([]byte) []byte) {
	t.Helper()
	b, err := readFile(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	b = f(b)
	if err := writeFileSynced(fs, path, b); err != nil {
		t.Fatal(err)
	}
}

func flip(at func(n int) int) func([]byte) []byte {
	return func(b []byte) []byte { b[at(len(b))] ^= 0x10; return b }
}

func TestCorruptionIsReported(t *testing.T) {
	cases := []struct {
		name string
		ext  string
		f    func([]byte) []byte
		// verify: Open succeeds; the damage shows in Verify and the next merge.
		verify bool
	}{
		{"manifest bit", "MANIFEST", flip(func(n int) int { return n / 2 }), false},
		{"manifest truncated", "MANIFEST", func(b []byte) []byte { return b[:len(b)-3] }, false},
		{"manifest empty", "MANIFEST", func([]byte) []byte { return nil }, false},
		{"run truncated", ".run", func(b []byte) []byte { return b[:len(b)-100] }, false},
		{"run footer", ".run", flip(func(n int) int { return n - 10 }), false},
		{"run index", ".run", flip(func(n int) int { return n - footerLen - 5 }), false},
		{"run block", ".run", flip(func(n int) int { return 40 }), true},
		{"run zeroed", ".run", func(b []byte) []byte { return make([]byte, len(b)) }, false},
		{"log middle chunk", ".log", flip(func(n int) int { return 20 }), false},
		{"batch", ".batch", flip(func(n int) int { return n / 2 }), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := populated(t)
			for _, p := range filesWith(t, fs, c.ext) {
				if c.ext == ".log" {
					// Append a second chunk so the damaged one is not the tail.
					d := openT(t, fs, &frontierSink{}, nil)
					d.Add(1, "http://tail.test/")
					d.Close()
				}
				mutate(t, fs, p, c.f)
				break
			}
			d, err := Open("db", Options{FS: fs, Sink: &frontierSink{}, FlushInterval: -1})
			if !c.verify {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open = %v, want ErrCorrupt", err)
				}
				t.Logf("reported: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Verify(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Verify = %v, want ErrCorrupt", err)
			}
			// A merge that needs the block fails loudly, never "new".
			s := newStream(5)
			for i := 0; i < 20000; i++ {
				u := s.next()
				if err := d.Add(fingerprint.URL(u), u); err != nil {
					break
				}
			}
			if err := d.Flush(); !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrFailed) {
				t.Fatalf("Flush = %v, want ErrFailed wrapping ErrCorrupt", err)
			}
		})
	}
}

func TestMissingManifest(t *testing.T) {
	fs := populated(t)
	if err := fs.Remove("db/MANIFEST"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("db", Options{FS: fs, Sink: &frontierSink{}}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
}

func TestMissingRun(t *testing.T) {
	fs := populated(t)
	if err := fs.Remove(filesWith(t, fs, ".run")[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("db", Options{FS: fs, Sink: &frontierSink{}}); err == nil {
		t.Fatal("Open succeeded without a run file")
	}
}

// A torn tail on the newest log is a crash during a write, not corruption:
// it is cut off and the DUE opens.
func TestTornLogTail(t *testing.T) {
	fs := populated(t)
	logs := filesWith(t, fs, ".log")
	newest := logs[len(logs)-1]
	for _, p := range logs {
		if b, _ := readFile(fs, p); len(b) > 0 {
			newest = p
		}
	}
	mutate(t, fs, newest, func(b []byte) []byte { return b[:len(b)-5] })
	sink := &frontierSink{}
	d, err := Open("db", Options{FS: fs, Sink: sink, FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = Open("db", Options{FS: fs, Sink: sink, FlushInterval: -1})
	if err != nil {
		t.Fatalf("reopen after cutting the tail: %v", err)
	}
	d.Close()
}
