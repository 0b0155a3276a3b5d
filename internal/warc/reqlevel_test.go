package warc_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
)

// Request records are stored by default (RequestLevel 0: a Huffman table
// costs most of compressing ~600 bytes, docs/bench/warc.md) and compressed
// at RequestLevel if set; the response is compressed either way, and the
// files validate.
func TestRequestLevel(t *testing.T) {
	body := []byte(strings.Repeat("<p>compressible page body</p>\n", 200))
	for _, level := range []int{0, gzip.BestSpeed} {
		dir := t.TempDir()
		w := newWriter(t, warc.Options{Dir: dir, RequestLevel: level})
		if _, err := w.WriteFetch(warc.Fetch{URL: "http://h.test/p", StatusCode: 200, Header: http.Header{"Content-Type": {"text/html"}},
			RequestHeader: http.Header{"User-Agent": {"sextant-test"}}, Body: section(body)}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
		if _, err := warctest.ValidateAll(files); err != nil || len(files) != 1 {
			t.Fatalf("level %d: files %v: %v", level, files, err)
		}
		raw, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		stored := bytes.Contains(raw, []byte("WARC-Type: request\r\n"))
		if stored != (level == 0) {
			t.Errorf("RequestLevel %d: request record stored %v", level, stored)
		}
		if bytes.Contains(raw, []byte("WARC-Type: response\r\n")) || bytes.Contains(raw, body[:200]) {
			t.Errorf("RequestLevel %d: the response record is stored", level)
		}
	}
}
