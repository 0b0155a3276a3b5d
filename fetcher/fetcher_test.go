package fetcher

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTest returns a Fetcher for loopback test servers; mod adjusts options.
func newTest(t testing.TB, mod func(*Options)) *Fetcher {
	t.Helper()
	o := Options{AllowPrivate: true, TempDir: t.TempDir(), MemThreshold: 4 << 10}
	if mod != nil {
		mod(&o)
	}
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func serve(t testing.TB, h http.HandlerFunc) *httptest.Server {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func readAll(t testing.TB, b *RewindBuffer) string {
	t.Helper()
	d, err := io.ReadAll(b.NewReader())
	if err != nil {
		t.Fatal(err)
	}
	return string(d)
}

func mustFetch(t testing.TB, f *Fetcher, u string) *Response {
	t.Helper()
	r, err := f.Fetch(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestFetchBasic(t *testing.T) {
	var gotUA, gotAE string
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotAE = r.UserAgent(), r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		io.WriteString(w, "<html>hello</html>")
	})
	f := newTest(t, nil)
	r := mustFetch(t, f, s.URL+"/a")
	if r.Status != 200 || r.ContentType != "text/html" || r.Charset != "utf-8" || r.Location != "" {
		t.Fatalf("got %+v", r)
	}
	if got := readAll(t, r.Body); got != "<html>hello</html>" || r.Bytes != int64(len(got)) || r.Truncated {
		t.Fatalf("body %q bytes %d truncated %v", got, r.Bytes, r.Truncated)
	}
	if r.RemoteIP != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("RemoteIP %v", r.RemoteIP)
	}
	if gotUA != DefaultUserAgent || gotAE != acceptEncoding {
		t.Fatalf("UA %q, Accept-Encoding %q", gotUA, gotAE)
	}
	if st := f.Stats(); st.Fetches != 1 || st.Status2xx != 1 || st.WireBytes != 18 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	var hits atomic.Int32
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/rel":
			http.Redirect(w, r, "../target?q=1#frag", http.StatusMovedPermanently)
		case "/abs":
			w.Header().Set("Location", "http://other.test/x")
			w.WriteHeader(http.StatusFound)
		case "/none":
			w.WriteHeader(http.StatusSeeOther)
		}
	})
	f := newTest(t, nil)
	for path, want := range map[string]string{
		"/rel":  s.URL + "/target?q=1#frag",
		"/abs":  "http://other.test/x",
		"/none": "",
	} {
		r := mustFetch(t, f, s.URL+path)
		if r.Status < 300 || r.Status > 399 || r.Location != want {
			t.Errorf("%s: status %d location %q, want %q", path, r.Status, r.Location, want)
		}
	}
	if hits.Load() != 3 {
		t.Fatalf("server saw %d requests, want 3 (redirects must not be followed)", hits.Load())
	}
	if st := f.Stats(); st.Status3xx != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestContentType(t *testing.T) {
	cases := []struct {
		header, body, wantType, wantCharset string
	}{
		{"Text/HTML; Charset=ISO-8859-1", "x", "text/html", "iso-8859-1"},
		{"application/xhtml+xml", "x", "application/xhtml+xml", ""},
		{"", "<!DOCTYPE html><html><body>sniffed", "text/html", "utf-8"},
		{"", "%PDF-1.4 ...", "application/pdf", ""},
		{"", "", "", ""},
		{"text/html;;; garbage=", "x", "text/html", ""},
		{"image/png", "\x89PNG", "image/png", ""},
	}
	for i, c := range cases {
		s := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if c.header != "" {
				w.Header().Set("Content-Type", c.header)
			} else {
				w.Header()["Content-Type"] = nil // suppress net/http's sniffing
			}
			io.WriteString(w, c.body)
		})
		r := mustFetch(t, newTest(t, nil), s.URL)
		if r.ContentType != c.wantType || r.Charset != c.wantCharset {
			t.Errorf("case %d %q: got %q/%q, want %q/%q", i, c.header, r.ContentType, r.Charset, c.wantType, c.wantCharset)
		}
	}
}

// blocker lets a handler hang until the test ends.
func blocker(t *testing.T) chan struct{} {
	ch := make(chan struct{})
	t.Cleanup(func() { close(ch) })
	return ch
}

func TestSlowHeaders(t *testing.T) {
	release := blocker(t)
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f := newTest(t, func(o *Options) { o.HeaderTimeout = 100 * time.Millisecond })
	_, err := f.Fetch(context.Background(), s.URL)
	if !errors.Is(err, ErrTimeout) || !IsRetryable(err) {
		t.Fatalf("err %v, want retryable ErrTimeout", err)
	}
	if st := f.Stats(); st.ErrTimeout != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestStallMidBody(t *testing.T) {
	release := blocker(t)
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 64<<10)) // beyond MemThreshold: spills
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f := newTest(t, func(o *Options) { o.FetchTimeout = 300 * time.Millisecond })
	_, err := f.Fetch(context.Background(), s.URL)
	if !errors.Is(err, ErrTimeout) || !IsRetryable(err) {
		t.Fatalf("err %v, want retryable ErrTimeout", err)
	}
	if n := countFiles(t, f.opts.TempDir); n != 0 {
		t.Fatalf("%d temp files left", n)
	}
	if n := countBodyFDs(t); n != 0 {
		t.Fatalf("%d descriptors of spilled bodies still open", n)
	}
}

func TestCallerCancel(t *testing.T) {
	release := blocker(t)
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f := newTest(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := f.Fetch(ctx, s.URL)
	if !errors.Is(err, ErrCanceled) || !IsRetryable(err) {
		t.Fatalf("err %v, want retryable ErrCanceled", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{RobotsToken: "bad token!", BodyCap: -1, RobotsCacheTTL: 48 * time.Hour,
		Resolve: map[string]string{"x.test": "not-an-ip"}, TempDir: "/nonexistent/dir"}
	_, err := New(o)
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"RobotsToken", "BodyCap", "RobotsCacheTTL", "Resolve", "TempDir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	var d Options
	d.EnsureDefaults()
	if d.BodyCap != 16<<20 || d.DecompressCap != 16<<20 || d.RobotsMaxBytes != 500<<10 || d.RobotsCacheTTL != 24*time.Hour {
		t.Fatalf("defaults %+v", d)
	}
}
