package fetcher

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/cespare/xxhash/v2"
)

func fill(t testing.TB, b *RewindBuffer, data []byte, chunk int) {
	t.Helper()
	for len(data) > 0 {
		n := min(chunk, len(data))
		if _, err := b.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
}

func TestRewindBufferSpillAndRewind(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 2, 999, 1000, 1001, 1002, 5000, 5001, 300_000, 300_001} {
		dir := t.TempDir()
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		b := NewRewindBuffer(1000, dir)
		if size%2 == 1 {
			fill(t, b, data, 1+rng.IntN(700))
		} else { // io.Copy → ReadFrom, in short reads
			if _, err := io.Copy(b, iotest.HalfReader(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
		}
		if b.Len() != int64(size) || b.Spilled() != (size > 1000) {
			t.Fatalf("size %d: Len %d Spilled %v", size, b.Len(), b.Spilled())
		}
		if b.Spilled() && countBodyFDs(t) != 1 {
			t.Fatalf("size %d: %d body descriptors open, want 1", size, countBodyFDs(t))
		}
		if n := countFiles(t, dir); n != 0 {
			t.Fatalf("size %d: %d names visible in TempDir; spilled files must be unlinked", size, n)
		}
		// Several processors, each from the start, some concurrently.
		var wg sync.WaitGroup
		for p := 0; p < 4; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := io.ReadAll(b.NewReader())
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("size %d reader %d: err %v, equal %v", size, p, err, bytes.Equal(got, data))
				}
			}()
		}
		wg.Wait()
		// A partial read does not disturb the next reader.
		r := b.NewReader()
		io.CopyN(io.Discard, r, int64(size/2))
		got, _ := io.ReadAll(b.NewReader())
		if !bytes.Equal(got, data) {
			t.Fatalf("size %d: second reader not at start", size)
		}
		fp, err := b.Fingerprint()
		if err != nil || fp != xxhash.Sum64(data) {
			t.Fatalf("size %d: fingerprint %x err %v", size, fp, err)
		}
		if m, ok := b.Bytes(); ok != !b.Spilled() || (ok && !bytes.Equal(m, data)) {
			t.Fatalf("size %d: Bytes ok=%v", size, ok)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
		if n := countBodyFDs(t); n != 0 {
			t.Fatalf("size %d: %d body descriptors open after Close", size, n)
		}
		if _, err := io.ReadAll(b.NewReader()); !errors.Is(err, ErrBufferClosed) {
			t.Fatalf("read after Close: %v", err)
		}
		if _, err := b.Write([]byte("x")); !errors.Is(err, ErrBufferClosed) {
			t.Fatalf("write after Close: %v", err)
		}
	}
}

// A processor that panics or fails must not leak the spilled body when the
// caller follows the documented pattern (defer resp.Close()).
func TestRewindBufferCleanupOnPanicAndError(t *testing.T) {
	dir := t.TempDir()
	process := func(fn func(io.Reader) error) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = errors.New("processor panicked")
			}
		}()
		b := NewRewindBuffer(10, dir)
		defer b.Close()
		fill(t, b, bytes.Repeat([]byte("abc"), 1000), 64)
		if !b.Spilled() {
			t.Fatal("did not spill")
		}
		if err := fn(b.NewReader()); err != nil {
			return err
		}
		return fn(b.NewReader())
	}
	if err := process(func(io.Reader) error { panic("boom") }); err == nil {
		t.Fatal("want panic error")
	}
	if err := process(func(io.Reader) error { return io.ErrUnexpectedEOF }); err == nil {
		t.Fatal("want error")
	}
	if n := countBodyFDs(t); n != 0 {
		t.Fatalf("%d body descriptors leaked", n)
	}
	if n := countFiles(t, dir); n != 0 {
		t.Fatalf("%d files left", n)
	}
}

func TestFetchSpillsAndCleans(t *testing.T) {
	body := bytes.Repeat([]byte("<p>hello</p>"), 10_000)
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	f := newTest(t, nil)
	r, err := f.Fetch(context.Background(), s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Body.Spilled() || countBodyFDs(t) != 1 {
		t.Fatalf("spilled %v, fds %d", r.Body.Spilled(), countBodyFDs(t))
	}
	if got := readAll(t, r.Body); got != string(body) {
		t.Fatal("body differs")
	}
	r.Close()
	if countBodyFDs(t) != 0 || countFiles(t, f.opts.TempDir) != 0 {
		t.Fatal("spilled body not cleaned up")
	}
	if st := f.Stats(); st.Spilled != 1 || st.BodyBytes != int64(len(body)) {
		t.Fatalf("stats %+v", st)
	}
}

// A body that cannot spill (the temp dir is gone, the disk is full) fails
// with ErrLocal: the crawler's own fault, retryable, never the server's.
func TestSpillFailureIsLocal(t *testing.T) {
	dir := t.TempDir()
	b := NewRewindBuffer(16, filepath.Join(dir, "gone"))
	defer b.Close()
	_, err := b.Write(make([]byte, 100))
	if !errors.Is(err, ErrLocal) {
		t.Fatalf("spill into a missing dir: %v, want ErrLocal", err)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 4096))
	}))
	defer srv.Close()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := New(Options{AllowPrivate: true, MemThreshold: 100, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.Remove(tmp)
	_, err = f.Fetch(context.Background(), srv.URL+"/big")
	if !errors.Is(err, ErrLocal) || !IsRetryable(err) {
		t.Fatalf("fetch spilling into a removed dir: %v (retryable %v), want a retryable ErrLocal", err, IsRetryable(err))
	}
	if _, err := New(Options{TempDir: tmp + "-missing"}); err == nil {
		t.Fatal("New accepted a TempDir that does not exist")
	}
}
