package fetcher

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

func TestBodyCap(t *testing.T) {
	body := strings.Repeat("0123456789", 10_000) // 100 000 bytes
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	f := newTest(t, func(o *Options) { o.BodyCap = 10_000 })
	r := mustFetch(t, f, s.URL)
	if !r.Truncated || r.Body.Len() != 10_000 || readAll(t, r.Body) != body[:10_000] {
		t.Fatalf("truncated %v len %d", r.Truncated, r.Body.Len())
	}
	// Exactly at the cap is not truncated.
	f2 := newTest(t, func(o *Options) { o.BodyCap = int64(len(body)) })
	r2 := mustFetch(t, f2, s.URL)
	if r2.Truncated || r2.Body.Len() != int64(len(body)) {
		t.Fatalf("at cap: truncated %v len %d", r2.Truncated, r2.Body.Len())
	}
}

// bomb compresses n zero bytes with the named encoding.
func bomb(t testing.TB, enc string, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
	case "br":
		w = brotli.NewWriterLevel(&buf, brotli.BestSpeed)
	case "zstd":
		var err error
		w, err = zstd.NewWriter(&buf, zstd.WithWindowSize(1<<20))
		if err != nil {
			t.Fatal(err)
		}
	}
	zero := make([]byte, 1<<20)
	for i := 0; i < n>>20; i++ {
		w.Write(zero)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecompressionBombs(t *testing.T) {
	const decoded = 64 << 20
	for _, enc := range []string{"gzip", "br", "zstd"} {
		t.Run(enc, func(t *testing.T) {
			z := bomb(t, enc, decoded)
			s := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", enc)
				w.Header().Set("Content-Type", "text/html")
				w.Write(z)
			})
			f := newTest(t, func(o *Options) { o.DecompressCap = 1 << 20 })
			r := mustFetch(t, f, s.URL)
			if !r.Truncated || r.Body.Len() != 1<<20 {
				t.Fatalf("%d compressed bytes: truncated %v len %d", len(z), r.Truncated, r.Body.Len())
			}
			// Below the cap the body decodes in full.
			f2 := newTest(t, func(o *Options) { o.DecompressCap = decoded })
			r2 := mustFetch(t, f2, s.URL)
			if r2.Truncated || r2.Body.Len() != decoded || r2.Bytes != int64(len(z)) {
				t.Fatalf("full: truncated %v len %d bytes %d", r2.Truncated, r2.Body.Len(), r2.Bytes)
			}
		})
	}
}

func TestCompressedCutAtBodyCap(t *testing.T) {
	var plain bytes.Buffer
	for i := 0; plain.Len() < 200_000; i++ {
		fmt.Fprintf(&plain, "line %d %x\n", i, i*7919)
	}
	var z bytes.Buffer
	gw := gzip.NewWriter(&z)
	gw.Write(plain.Bytes())
	gw.Close()
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(z.Bytes())
	})
	f := newTest(t, func(o *Options) { o.BodyCap = int64(z.Len() / 2); o.DecompressCap = 1 << 30 })
	r := mustFetch(t, f, s.URL)
	got := readAll(t, r.Body)
	if !r.Truncated || len(got) == 0 || !strings.HasPrefix(plain.String(), got) || r.Bytes != int64(z.Len()/2) {
		t.Fatalf("truncated %v, decoded %d bytes (prefix ok %v), wire %d", r.Truncated, len(got), strings.HasPrefix(plain.String(), got), r.Bytes)
	}
}

func TestBadEncoding(t *testing.T) {
	for enc, body := range map[string]string{
		"gzip":     "definitely not gzip",
		"compress": "lzw?",
		"zstd":     "\x28\xb5\x2f\xfd garbage frame",
	} {
		s := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", enc)
			io.WriteString(w, body)
		})
		f := newTest(t, nil)
		_, err := f.Fetch(context.Background(), s.URL)
		if !errors.Is(err, ErrEncoding) || IsRetryable(err) {
			t.Errorf("%s: err %v, want non-retryable ErrEncoding", enc, err)
		}
		if n := countFiles(t, f.opts.TempDir); n != 0 {
			t.Errorf("%d temp files left", n)
		}
	}
	// An empty gzip body (as on a 204 or a HEAD-like reply) is fine.
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusNoContent)
	})
	r := mustFetch(t, newTest(t, nil), s.URL)
	if r.Status != 204 || r.Body.Len() != 0 {
		t.Fatalf("got %d len %d", r.Status, r.Body.Len())
	}
}

func countFiles(t testing.TB, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// countBodyFDs returns the number of open descriptors of spilled bodies
// (unlinked files named sextant-body-*), or 0 where /proc is absent.
func countBodyFDs(t testing.TB) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range es {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, "sextant-body-") {
			n++
		}
	}
	return n
}

func TestEndlessBodyAndShortBody(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/endless":
			chunk := bytes.Repeat([]byte("z"), 32<<10)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/short": // promises more than it sends, then hangs up
			w.Header().Set("Content-Length", "100000")
			w.Write(make([]byte, 1000))
			panic(http.ErrAbortHandler)
		}
	})
	f := newTest(t, func(o *Options) { o.BodyCap = 300 << 10 })
	r := mustFetch(t, f, s.URL+"/endless")
	if !r.Truncated || r.Body.Len() != 300<<10 || !r.Body.Spilled() {
		t.Fatalf("endless: truncated %v len %d", r.Truncated, r.Body.Len())
	}
	_, err := f.Fetch(context.Background(), s.URL+"/short")
	if !errors.Is(err, ErrConnect) || !IsRetryable(err) {
		t.Fatalf("short body: err %v, want retryable ErrConnect", err)
	}
	if n := countBodyFDs(t); n != 1 { // only the endless page's, still open
		t.Fatalf("%d body descriptors open", n)
	}
}

// Pooled decoders recover from a corrupt stream: each encoding decodes a
// good body after a bad one, repeatedly.
func TestDecoderReuseAfterError(t *testing.T) {
	plain := strings.Repeat("reuse me ", 5000)
	good := map[string][]byte{}
	for _, enc := range []string{"gzip", "br", "zstd"} {
		var buf bytes.Buffer
		var w io.WriteCloser
		switch enc {
		case "gzip":
			w = gzip.NewWriter(&buf)
		case "br":
			w = brotli.NewWriter(&buf)
		case "zstd":
			w, _ = zstd.NewWriter(&buf)
		}
		io.WriteString(w, plain)
		w.Close()
		good[enc] = buf.Bytes()
	}
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		enc := r.URL.Query().Get("enc")
		w.Header().Set("Content-Encoding", enc)
		if r.URL.Path == "/bad" {
			b := append([]byte(nil), good[enc][:len(good[enc])/2]...)
			for i := 10; i < len(b); i += 7 {
				b[i] ^= 0x5a
			}
			w.Write(b)
			return
		}
		w.Write(good[enc])
	})
	f := newTest(t, nil)
	for round := 0; round < 3; round++ {
		for enc := range good {
			if r, err := f.Fetch(context.Background(), s.URL+"/bad?enc="+enc); err == nil {
				r.Close() // a corrupt stream may still decode to garbage; either way no panic
			}
			r := mustFetch(t, f, s.URL+"/good?enc="+enc)
			if got := readAll(t, r.Body); got != plain {
				t.Fatalf("%s round %d: decoded %d bytes, want %d", enc, round, len(got), len(plain))
			}
		}
	}
}
