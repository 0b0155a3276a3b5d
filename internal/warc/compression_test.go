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

func TestParseCompression(t *testing.T) {
	for s, want := range map[string]int{"fast": gzip.BestSpeed, "huffman": gzip.HuffmanOnly, "store": gzip.NoCompression, "1": 1, "9": 9} {
		if got, err := warc.ParseCompression(s); err != nil || got != want {
			t.Errorf("ParseCompression(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "10", "-1", "-2", "Fast", " fast", "none"} {
		if _, err := warc.ParseCompression(s); err == nil {
			t.Errorf("ParseCompression(%q): no error", s)
		}
		if err := (&warc.Options{Dir: t.TempDir(), Compression: s}).Validate(); s != "" && err == nil {
			t.Errorf("Options.Validate with Compression %q: no error", s)
		}
	}
}

// Each setting writes files both readers validate, across rotations;
// "store" writes the response uncompressed (stored deflate blocks
// in a gzip member), the others compress it.
func TestCompressionSettings(t *testing.T) {
	body := []byte(strings.Repeat("<p>compressible page body</p>\n", 400))
	for _, c := range []string{"fast", "huffman", "store", "9"} {
		dir := t.TempDir()
		w := newWriter(t, warc.Options{Dir: dir, Compression: c, MaxSize: 1 << 10})
		for range 5 {
			body = append(body, 'x') // distinct payloads: no revisits
			if _, err := w.WriteFetch(warc.Fetch{URL: "http://h.test/p", StatusCode: 200, Header: http.Header{"Content-Type": {"text/html"}},
				Body: section(body)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
		recs, err := warctest.ValidateAll(files)
		if err != nil || len(files) < 2 {
			t.Fatalf("%s: files %v: %v", c, files, err)
		}
		if n := len(recs) - len(files); n != 10 {
			t.Errorf("%s: %d records besides warcinfo, want 10", c, n)
		}
		var raw []byte
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			raw = append(raw, b...)
		}
		stored := bytes.Contains(raw, []byte("WARC-Type: response\r\n")) && bytes.Contains(raw, body[:2000])
		if stored != (c == "store") {
			t.Errorf("%s: response stored uncompressed %v", c, stored)
		}
	}
}
