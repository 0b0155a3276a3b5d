package warc

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"

	"github.com/sextant-crawler/sextant/internal/cputime"

	"github.com/klauspost/compress/gzip"
)

// body20k is a 20 KB HTML-like body (the median simweb page), compressible
// like real HTML.
func body20k() []byte {
	rng := rand.New(rand.NewPCG(1, 1))
	words := []string{"<p>", "</p>", "<a href=\"/x\">", "</a>", "crawler", "the", "web", "page", "link", "sextant", "\n"}
	var b bytes.Buffer
	for b.Len() < 20<<10 {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.Bytes()[:20<<10]
}

// BenchmarkWriteFetch writes request+response records of a 20 KB body.
func BenchmarkWriteFetch(b *testing.B) {
	body := body20k()
	w, err := NewWriter(Options{Dir: b.TempDir(), MaxSize: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{"Content-Type": {"text/html"}}
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := w.WriteFetch(Fetch{URL: "http://h1.sim.test/p", StatusCode: 200, Header: h, Body: section(body)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	w.Close()
	b.ReportMetric(float64(w.Stats().Bytes)/float64(b.N), "bytes/fetch")
}

// BenchmarkGzipBaseline is the baseline: gzip (the same klauspost
// implementation and level the Writer uses) of the same body alone, the
// least any compressed WARC writer must do.
func BenchmarkGzipBaseline(b *testing.B) {
	body := body20k()
	zw := gzip.NewWriter(io.Discard)
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		zw.Reset(io.Discard)
		zw.Write(body)
		zw.Close()
	}
}

// BenchmarkCompressLevel compresses one record at each gzip level worth
// considering (docs/bench/warc.md: why level 1): a 20 KB page's response
// record and a request record (which pays a Huffman table of its own).
func BenchmarkCompressLevel(b *testing.B) {
	body := body20k()
	req := requestHead("GET", "http://h17.sim.test/a/b/c", "HTTP/1.1", http.Header{"User-Agent": {"sextant/1.0"}, "Accept-Encoding": {"gzip"}})
	for _, rec := range []struct {
		name       string
		head, body []byte
	}{{"page", []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"), body}, {"request", req, nil}} {
		for _, level := range []int{gzip.NoCompression, gzip.HuffmanOnly, gzip.BestSpeed, 2, 3} {
			b.Run(fmt.Sprintf("%s/level=%d", rec.name, level), func(b *testing.B) {
				p := &pending{typ: "response", id: "<urn:uuid:x>", head: rec.head, body: section(rec.body)}
				p.digest()
				var out bufferWriter
				b.SetBytes(int64(len(rec.head) + len(rec.body)))
				for i := 0; i < b.N; i++ {
					out.b = out.b[:0]
					if err := compress(&out, p, level); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(out.b)), "gz-bytes")
			})
		}
	}
}

// BenchmarkArchivePage is the CPU of archiving one 20 KB page with the
// headers a crawl sends and receives, no revisits (every payload is
// new), per body (html: compressible; png: random bytes behind PNG's
// magic, stored since precompressed.go) and compression setting:
// WriteFetch from digests to the record in the OS, CDXJ line included.
func BenchmarkArchivePage(b *testing.B) {
	html := body20k()
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, len(html)-8)...)
	rng := rand.New(rand.NewPCG(2, 2))
	for i := 8; i < len(png); i++ {
		png[i] = byte(rng.Uint32())
	}
	req := http.Header{"User-Agent": {"sextant/(devel) (+https://example.test/bot)"}, "Accept": {"text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"},
		"Accept-Encoding": {"gzip"}, "Accept-Language": {"en"}}
	for _, kind := range []struct {
		name, ctype string
		body        []byte
	}{{"html", "text/html; charset=utf-8", html}, {"png", "image/png", png}} {
		resp := http.Header{"Content-Type": {kind.ctype}, "Date": {"Thu, 26 Nov 2026 23:50:00 GMT"},
			"Last-Modified": {"Wed, 25 Nov 2026 10:00:00 GMT"}, "Etag": {`"5f3a-1a2b"`}, "Server": {"simweb"}, "Content-Length": {"20480"}}
		for _, c := range []string{CompressionFast, CompressionHuffman, CompressionStore} {
			b.Run(kind.name+"/"+c, func(b *testing.B) { archivePages(b, c, kind.body, resp, req) })
		}
	}
}

func archivePages(b *testing.B, c string, body []byte, resp, req http.Header) {
	w, err := NewWriter(Options{Dir: b.TempDir(), MaxSize: 256 << 20, Compression: c, RevisitMemory: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	cpu0 := cputime.Process()
	for i := 0; b.Loop(); i++ {
		body[len(body)-1-i%(len(body)-16)]++ // a new payload, the magic kept
		if _, err := w.WriteFetch(Fetch{URL: "https://www.h1.sim.test/articles/p-" + strconv.Itoa(i) + ".html", StatusCode: 200,
			Header: resp, RequestHeader: req, IP: "127.0.0.1", Body: section(body)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
