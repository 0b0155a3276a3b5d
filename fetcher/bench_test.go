package fetcher

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
// the same run. allocs/op include the in-process server's allocations,
// which are the same for both clients.
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
			for b.Loop() {
				r, err := f.Fetch(ctx, s.URL+"/page")
				if err != nil || r.Body.Len() != int64(size.n) {
					b.Fatal(err)
				}
				r.Close()
			}
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
