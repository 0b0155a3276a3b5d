package warc_test

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
)

// A response whose body is already compressed (a compressing
// Content-Encoding, or the magic bytes of a compressed format) is written
// in stored blocks at every Compression but store; other bodies are
// compressed. The files validate with both readers and keep the bodies
// byte for byte.
func TestPrecompressedBodiesStored(t *testing.T) {
	noise := make([]byte, 8<<10)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	html := []byte(strings.Repeat("<p>compressible page body</p>\n", 300))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(html)
	zw.Close()
	mp4 := append([]byte("\x00\x00\x00\x18ftypmp42"), noise...)
	cases := []struct {
		name   string
		ctype  string
		enc    string
		body   []byte
		stored bool
	}{
		{"html", "text/html", "", html, false},
		{"gzip encoded", "text/html", "gzip", gz.Bytes(), true},
		{"br listed second", "text/html", "identity, br", noise, true},
		{"bogus encoding", "text/html", "utf-8", html, false},
		{"png", "image/png", "", append([]byte("\x89PNG\r\n\x1a\n"), noise...), true},
		{"jpeg mislabelled", "application/octet-stream", "", append([]byte{0xff, 0xd8, 0xff, 0xe0}, noise...), true},
		{"mp4", "video/mp4", "", mp4, true},
		{"webp", "image/webp", "", append([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "), noise...), true},
		{"wav", "audio/wav", "", append([]byte("RIFF\x00\x00\x00\x00WAVEfmt "), html...), false},
		{"pdf", "application/pdf", "", append([]byte("%PDF-1.4\n"), html...), false},
		{"gif", "image/gif", "", append([]byte("GIF89a"), noise...), true},
		{"bzip2", "application/x-bzip2", "", append([]byte("BZh91AY&SY"), noise...), true},
		{"text starting BZh", "text/plain", "", append([]byte("BZh is no word\n"), html...), false},
		{"text starting ID3", "text/html", "", append([]byte("ID3 tags, explained\n"), html...), false},
		{"mp3 with ID3v2", "audio/mpeg", "", append([]byte("ID3\x04\x00\x00"), noise...), true},
	}
	for _, comp := range []string{warc.CompressionFast, warc.CompressionHuffman} {
		for _, c := range cases {
			dir := t.TempDir()
			w := newWriter(t, warc.Options{Dir: dir, Compression: comp})
			h := http.Header{"Content-Type": {c.ctype}}
			if c.enc != "" {
				h.Set("Content-Encoding", c.enc)
			}
			if _, err := w.WriteFetch(warc.Fetch{URL: "http://h.test/" + c.name, StatusCode: 200, Header: h, Body: section(c.body)}); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			fs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
			recs, err := warctest.ValidateAll(fs)
			if err != nil || len(fs) != 1 {
				t.Fatalf("%s %s: files %v: %v", comp, c.name, fs, err)
			}
			var block []byte
			for _, r := range recs {
				if r.Type == "response" {
					block = r.Block
				}
			}
			if !bytes.HasSuffix(block, c.body) {
				t.Errorf("%s %s: the response block does not end with the body", comp, c.name)
			}
			raw, err := os.ReadFile(fs[0])
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(raw, []byte("WARC-Type: response\r\n")); got != c.stored {
				t.Errorf("%s %s: response record stored %v, want %v", comp, c.name, got, c.stored)
			}
		}
	}
}
