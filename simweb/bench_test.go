package simweb

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/cputime"
)

// articlePaths returns n (host, path) pairs of ordinary articles of w.
func articlePaths(w *Web, n int) [][2]string {
	var out [][2]string
	r := rng{s: 11}
	for len(out) < n {
		h := int32(r.intn(len(w.hosts)))
		if w.hosts[h].kind != Normal {
			continue
		}
		t := target{host: h, kind: pkArticle, a: 1 + int64(r.intn(int(w.hosts[h].n)))}
		if t.a >= int64(w.hosts[h].n) {
			t = target{host: h, kind: pkHome}
		}
		out = append(out, [2]string{w.HostName(int(h)), string(w.appendPath(nil, t))})
	}
	return out
}

// BenchmarkGenerate: generator cost of an HTML page as the server builds it
// (no link collection), against copying a pre-built page of the same size.
func BenchmarkGenerate(b *testing.B) {
	w := newWeb(b, DefaultConfig())
	paths := articlePaths(w, 1024)
	b.Run("simweb", func(b *testing.B) {
		var bytesOut int64
		b.ReportAllocs()
		cpu0 := cputime.Process()
		for i := 0; b.Loop(); i++ {
			hp := paths[i%len(paths)]
			h, _ := w.HostIndex(hp[0])
			g := w.getGen(false)
			w.build(g, int32(h), hp[1])
			bytesOut += int64(len(g.buf))
			putGen(g)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/page")
		b.ReportMetric(float64(bytesOut)/float64(b.N), "bytes/page")
		b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/page")
	})
	b.Run("baseline-copy", func(b *testing.B) {
		page := bytes.Repeat([]byte("x"), 20<<10)
		buf := make([]byte, 0, 64<<10)
		cpu0 := cputime.Process()
		for b.Loop() {
			buf = append(buf[:0], page...)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/page")
		b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/page")
	})
}

// BenchmarkServe: pages/s over loopback HTTP with a parallel keep-alive
// client, simweb against a handler that writes one fixed 20 KB page.
func BenchmarkServe(b *testing.B) {
	cfg := DefaultConfig()
	cfg.HTTPSShare, cfg.RedirectHTTPSShare = 0, 0 // the baseline is plain HTTP
	w := newWeb(b, cfg)
	paths := articlePaths(w, 1024)
	srv := startServer(b, w, Options{NoLatency: true, NoLog: true})
	b.Run("simweb", func(b *testing.B) { benchServe(b, srv.Client(), "", paths) })

	page := bytes.Repeat([]byte("<p>static</p>\n"), 20000/14)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		rw.Write(page)
	})}
	go hs.Serve(ln)
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", ln.Addr().String())
		}}}
	b.Run("baseline-static", func(b *testing.B) { benchServe(b, client, "", paths) })
}

func benchServe(b *testing.B, c *http.Client, _ string, paths [][2]string) {
	var i, bytesIn atomic.Int64
	start, cpu0 := time.Now(), cputime.Process()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			hp := paths[i.Add(1)%int64(len(paths))]
			resp, err := c.Get("http://" + hp[0] + hp[1])
			if err != nil {
				b.Error(err)
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			bytesIn.Add(n)
		}
	})
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N)/el, "pages/s")
	b.ReportMetric(float64(bytesIn.Load())/el/1e6, "MB/s")
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/page")
}

// BenchmarkOracle: the oracle's cost per fetched URL on the small web.
func BenchmarkOracle(b *testing.B) {
	w := newWeb(b, SmallConfig())
	var n int
	cpu0 := cputime.Process()
	for b.Loop() {
		res, err := w.Oracle(w.Seeds(), Rules{})
		if err != nil {
			b.Fatal(err)
		}
		n = len(res.Fetched)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/URL")
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N*n), "cpu-ns/URL")
}
