package fetcher

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/cputime"
)

var benchPages = []struct {
	name string
	n    int
	gzip bool
}{{"small", 512, false}, {"20KB", 20 << 10, false}, {"20KB-gzip", 20 << 10, true}}

// benchServer serves a page of n bytes of HTML, gzip-compressed (by the
// server, once) if asked and the client accepts it. Both clients decode
// it: the bare net/http client transparently.
func benchServer(n int, gz bool) *httptest.Server {
	body := []byte(strings.Repeat("<p>lorem ipsum dolor sit amet</p>\n", n/34+1)[:n])
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(body)
	zw.Close()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if gz && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(z.Bytes())
			return
		}
		w.Write(body)
	}))
}

// BenchmarkFetch measures sequential fetch throughput over loopback for a
// small and a 20 KB page, with this Fetcher and with a bare net/http client
// loop (GET, read the body into memory, close) against the same server in
// the same run. allocs/op and cpu-µs/op (the process's CPU, getrusage)
// include the in-process server's, which are the same for both clients.
func BenchmarkFetch(b *testing.B) {
	for _, size := range benchPages {
		s := benchServer(size.n, size.gzip)
		b.Run(size.name+"/fetcher", func(b *testing.B) {
			f, err := New(Options{AllowPrivate: true, TempDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := cputime.Process()
			for b.Loop() {
				r, err := f.Fetch(ctx, s.URL+"/page")
				if err != nil || r.Body.Len() != int64(size.n) {
					b.Fatal(err)
				}
				r.Close()
			}
			b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		})
		b.Run(size.name+"/bare", func(b *testing.B) {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Get(s.URL + "/page")
				if err != nil {
					b.Fatal(err)
				}
				d, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || len(d) != size.n {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		})
		s.Close()
	}
}

// BenchmarkFetchInterleaved alternates one fetch with this Fetcher and one
// with a bare net/http loop, timing each, so that the noise of a shared
// machine hits both equally; it reports both rates and their ratio.
func BenchmarkFetchInterleaved(b *testing.B) {
	for _, size := range benchPages {
		s := benchServer(size.n, size.gzip)
		b.Run(size.name, func(b *testing.B) {
			f, err := New(Options{AllowPrivate: true, TempDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			tr := http.DefaultTransport.(*http.Transport).Clone()
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			ctx := context.Background()
			var tf, tb time.Duration
			for b.Loop() {
				t0 := time.Now()
				r, err := f.Fetch(ctx, s.URL+"/page")
				if err != nil || r.Body.Len() != int64(size.n) {
					b.Fatal(err)
				}
				r.Close()
				t1 := time.Now()
				resp, err := c.Get(s.URL + "/page")
				if err != nil {
					b.Fatal(err)
				}
				d, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || len(d) != size.n {
					b.Fatal(err)
				}
				tf += t1.Sub(t0)
				tb += time.Since(t1)
			}
			b.ReportMetric(float64(b.N)/tf.Seconds(), "fetcher-pages/s")
			b.ReportMetric(float64(b.N)/tb.Seconds(), "bare-pages/s")
			b.ReportMetric(tb.Seconds()/tf.Seconds(), "ratio")
		})
		s.Close()
	}
}

// BenchmarkRobotsAllowed measures matching one URL against a parsed file.
func BenchmarkRobotsAllowed(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for i := 0; i < 200; i++ {
		sb.WriteString("Disallow: /dir")
		sb.WriteString(strings.Repeat("x", i%17))
		sb.WriteString("/*.php$\nAllow: /dir/page")
		sb.WriteString(strings.Repeat("y", i%13))
		sb.WriteString("\n")
	}
	ar := parseRobots([]byte(sb.String())).forAgent("sextant")
	b.ReportAllocs()
	for b.Loop() {
		ar.allowed("/dirxxxx/some/long/path/index.php")
	}
}

// BenchmarkRobotsHostile matches against the worst patterns a 500 KiB
// file can hold: rules of "*a" runs, as many as a 2 000-byte path of 'a's
// can satisfy (longer ones are rejected by length), that fail at the end.
func BenchmarkRobotsHostile(b *testing.B) {
	pat := strings.Repeat("*a", 1000) + "b"
	body := "User-agent: *\n" + strings.Repeat("Disallow: "+pat+"\n", (500<<10)/len(pat))
	ar := parseRobots([]byte(body)).forAgent("sextant")
	path := "/" + strings.Repeat("a", 2000)
	b.ReportAllocs()
	for b.Loop() {
		ar.allowed(path)
	}
	b.ReportMetric(float64(len(ar.rules)), "rules")
}

// noSessionCache never keeps a session: every handshake is a full one.
type noSessionCache struct{}

func (noSessionCache) Get(string) (*tls.ClientSessionState, bool) { return nil, false }
func (noSessionCache) Put(string, *tls.ClientSessionState)        {}

// BenchmarkTLSNewConnection measures a fetch over a new TLS connection (the
// idle one closed first, as after a host's delay outlasted
// IdleConnTimeout), alternating in one loop a Fetcher that resumes sessions
// (the default) and one whose session cache keeps nothing (full
// handshake, certificate verified), against the same in-process TLS 1.3
// server. It reports both rates and full ÷ resumed time.
func BenchmarkTLSNewConnection(b *testing.B) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer s.Close()
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	mk := func(cache tls.ClientSessionCache) *Fetcher {
		f, err := New(Options{AllowPrivate: true, TempDir: b.TempDir(),
			TLSConfig: &tls.Config{RootCAs: pool, ClientSessionCache: cache}})
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	resumed, full := mk(nil), mk(noSessionCache{})
	defer resumed.Close()
	defer full.Close()
	ctx := context.Background()
	fetch := func(f *Fetcher) time.Duration {
		f.tr.CloseIdleConnections()
		t0 := time.Now()
		r, err := f.Fetch(ctx, s.URL)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
		return time.Since(t0)
	}
	var tr, tf time.Duration
	for b.Loop() {
		tr += fetch(resumed)
		tf += fetch(full)
	}
	if st := resumed.Stats(); st.TLSResumed < st.TLSHandshakes-1 {
		b.Fatalf("resumed %d of %d handshakes", st.TLSResumed, st.TLSHandshakes)
	}
	if st := full.Stats(); st.TLSResumed != 0 {
		b.Fatalf("the no-cache fetcher resumed %d", st.TLSResumed)
	}
	b.ReportMetric(float64(b.N)/tr.Seconds(), "resumed-fetches/s")
	b.ReportMetric(float64(b.N)/tf.Seconds(), "full-fetches/s")
	b.ReportMetric(tf.Seconds()/tr.Seconds(), "full/resumed")
}

// writeCounter counts a connection's writes: each is one syscall, and over
// loopback one wake-up of the server.
type writeCounter struct {
	net.Conn
	n *atomic.Int64
}

func (c writeCounter) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// BenchmarkFetchSocketWrites reports the socket writes per sequential fetch
// of a 20 KB page over TLS, HTTP/1.1 against HTTP/2 (the same server, h2
// offered by ALPN or not). Over h2, net/http's client returns
// flow-control credit with a WINDOW_UPDATE once 4 KiB or more of body has
// been read since the last one: writes a keep-alive HTTP/1.1 loop does not
// make (docs/bench/onehost.md).
func BenchmarkFetchSocketWrites(b *testing.B) {
	page := strings.Repeat("<p>lorem ipsum dolor sit amet</p>\n", (20<<10)/34)
	for _, proto := range []struct {
		name string
		h2   bool
	}{{"http1", false}, {"h2", true}} {
		b.Run(proto.name, func(b *testing.B) {
			s, pool := tlsServer(b, proto.h2, nil, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, page) })
			var writes atomic.Int64
			f, err := New(Options{AllowPrivate: true, TLSConfig: &tls.Config{RootCAs: pool}, DisableHTTP2: !proto.h2,
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
					return writeCounter{c, &writes}, err
				}})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			ctx := context.Background()
			if _, err := f.Fetch(ctx, s.URL+"/warm"); err != nil { // handshake and SETTINGS outside the count
				b.Fatal(err)
			}
			writes.Store(0)
			for b.Loop() {
				r, err := f.Fetch(ctx, s.URL+"/page")
				if err != nil || r.Body.Len() != int64(len(page)) {
					b.Fatal(err)
				}
				r.Close()
			}
			b.ReportMetric(float64(writes.Load())/float64(b.N), "writes/fetch")
		})
	}
}
