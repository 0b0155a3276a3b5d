package extract

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/cputime"

	"github.com/google/go-cmp/cmp"
)

// chunkReader returns at most n bytes per Read, so that bufio's buffer ends
// inside text runs, references and runes.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.n > 0 && len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

type skipRun struct {
	links []Link
	res   Result
	err   string
	read  int64 // bytes the decoder read
}

// runXML extracts doc read in chunks of chunk bytes (0: whole), with the
// decoder reading all text (decodeText) or xmlSource skipping it.
func runXML(t testing.TB, opts Options, doc []byte, ct string, chunk int, decodeText bool) skipRun {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.decodeText = decodeText
	var r skipRun
	src := &e.xsrc
	var n int64
	res, err := e.Extract(&chunkReader{bytes.NewReader(doc), chunk}, mustURL(t, "http://fuzz.example/dir/page.xhtml"), ct,
		func(l Link) {
			r.links = append(r.links, l)
			n = src.n
		})
	r.res, r.read = res, n
	if err != nil {
		r.err = err.Error()
	}
	return r
}

// compareSkip checks that skipping text changes nothing a caller can see.
func compareSkip(t *testing.T, opts Options, doc []byte, ct string, chunk int) {
	t.Helper()
	want := runXML(t, opts, doc, ct, chunk, true)
	got := runXML(t, opts, doc, ct, chunk, false)
	if d := cmp.Diff(want.links, got.links); d != "" || want.err != got.err {
		t.Fatalf("chunk %d, MaxTokenBytes %d: links differ from the decoder's (-decoder +skip):\n%s\nerr %q vs %q\ndoc %q",
			chunk, opts.MaxTokenBytes, d, want.err, got.err, doc)
	}
	if want.res != got.res {
		t.Fatalf("chunk %d, MaxTokenBytes %d: result %+v, decoder's %+v\ndoc %q", chunk, opts.MaxTokenBytes, got.res, want.res, doc)
	}
}

// skipDocs are the cases the text check must get right.
var skipDocs = []string{
	`<html xmlns="http://www.w3.org/1999/xhtml"><p>a ]]> b</p><a href="/1"/></html>`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><p>a ]] > ]>] b]</p><a href="/1"/>]</html>]]`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><p>&#0; &#x1; &#xFFFE; &#1114112; &#xD800; &#65;</p><a href="/1"/></html>`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><p>&#65;&#x41;&#X41;&#;&#x;&#99999999999999999999;&amp&nbsp;&bogus;&;&</p><a href="/1"/></html>`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><p>&amp</p><a href="/1"/>&#65</html>`,
	"<html xmlns=\"http://www.w3.org/1999/xhtml\"><p>caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \xef\xbf\xbe</p><a href=\"/1\"/></html>",
	"<html xmlns=\"http://www.w3.org/1999/xhtml\"><p>\xc3&amp;\xa9</p><a href=\"/1\"/><p>\x0c</p><a href=\"/2\"/></html>",
	"<html xmlns=\"http://www.w3.org/1999/xhtml\"><p>a\r\nb\rc\x00</p><a href=\"/1\"/></html>",
	`<html xmlns="http://www.w3.org/1999/xhtml"><br>text</br><a href="/1"/><img src="/i">x</img><BR>y</br><hr/>z</hr><a href="/2"/></html>`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><title><br>t</br><a href="/in"/></title><a href="/2"/><style><img>x</img><a href="/s"/></style></html>`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><br><br>t</br><a href="/1"/><br><!--c-->t</br><a href="/2"/></html>`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><script>x < y</script><a href="/1"/><style><![CDATA[a<b]]>t</style><?pi x?>t<!-- <a href="/no"/> -->t<a href="/2"/></html>`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><a href="/a?x=1&amp;y=&#50;&lt;" title="a&nbsp;b">t&amp;t</a> tail`,
	`text before <html xmlns="http://www.w3.org/1999/xhtml"><a href="/1"/></html> text after`,
	"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\">caf\xe9<a href=\"/caf\xe9\"/></html>",
}

func skipSeeds(tb testing.TB) [][]byte {
	var docs [][]byte
	for _, d := range append(append(append([]string{}, skipDocs...), xhtmlFuzzDocs...), fuzzDocs...) {
		docs = append(docs, []byte(d))
	}
	docs = append(docs, xhtmlLinksPage(), xhtmlArticle())
	// The committed corpora of the other fuzz targets, read as XML.
	files, _ := filepath.Glob("testdata/fuzz/*/*")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if lit, ok := strings.CutPrefix(line, "[]byte("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(lit, ")")); err == nil {
					docs = append(docs, []byte(s))
				}
			}
		}
	}
	return docs
}

// TestXHTMLSkipSameAsDecoder runs the seeds of FuzzXHTMLSkip over a grid of
// chunk sizes and token caps.
func TestXHTMLSkipSameAsDecoder(t *testing.T) {
	for _, doc := range skipSeeds(t) {
		for _, chunk := range []int{0, 1, 3, 7, 64} {
			for _, maxTok := range []int{0, 5, 17, 100} {
				for _, ct := range []string{xhtmlCT, "text/xml"} {
					compareSkip(t, Options{MaxTokenBytes: maxTok, MaxLinks: 2000}, doc, ct, chunk)
				}
			}
		}
	}
}

// FuzzXHTMLSkip: skipping text on the XML path gives exactly what the
// decoder reading every byte gives (links, Result, error), whatever the
// document, the read sizes and the token cap.
func FuzzXHTMLSkip(f *testing.F) {
	for i, d := range skipSeeds(f) {
		f.Add(d, xhtmlCT, uint8(i), uint8(i*7))
	}
	f.Fuzz(func(t *testing.T, doc []byte, contentType string, chunk, maxTok uint8) {
		if kindOf(contentType) == kindHTML {
			contentType = xhtmlCT
		}
		opts := Options{MaxLinks: 40, MaxAttrLen: 300, MaxTokenBytes: 1 + int(maxTok)*8, MaxBytes: 16 << 10}
		compareSkip(t, opts, doc, contentType, int(chunk%70))
	})
}

// The decoder reads the markup only: the optimisation is in place.
func TestXHTMLSkipReadsLess(t *testing.T) {
	for _, tc := range []struct {
		page []byte
		frac float64 // of the bytes the decoder still reads, at most
	}{{xhtmlLinksPage(), 0.7}, {xhtmlArticle(), 0.2}} {
		page := tc.page
		dec := runXML(t, Options{}, page, xhtmlCT, 0, true)
		skip := runXML(t, Options{}, page, xhtmlCT, 0, false)
		t.Logf("decoder read %d of %d bytes", skip.read, len(page))
		if len(skip.links) != len(dec.links) || float64(skip.read) > tc.frac*float64(dec.read) {
			t.Errorf("decoder read %d of %d bytes skipping text, %d reading all (%d and %d links)",
				skip.read, len(page), dec.read, len(skip.links), len(dec.links))
		}
	}
}

// xhtmlLinksPage is BenchmarkExtractXHTML's page: ~100 KB, 1,001 links,
// short text between them.
func xhtmlLinksPage() []byte {
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title>` +
		`<link rel="stylesheet" href="/s.css"/></head><body>`)
	for i := range 1000 {
		fmt.Fprintf(&sb, `<p class="c">Some text &amp; more text, item %d.</p><a href="/page/%d.html" title="x">l</a>`+"\n", i, i)
	}
	sb.WriteString("</body></html>")
	return []byte(sb.String())
}

// xhtmlArticle is an article: ~60 KB, 40 paragraphs of prose (some of it
// not ASCII, with references) and a few links in each.
func xhtmlArticle() []byte {
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><title>An article</title>` +
		`<link rel="stylesheet" href="/s.css"/><script src="/a.js"/></head><body><h1>An article</h1>`)
	prose := `Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua &mdash; ` +
		`ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. ` +
		"Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur; caf\u00e9, na\u00efve, \u201cquoted\u201d. "
	for i := range 40 {
		fmt.Fprintf(&sb, "<h2 id=\"s%d\">Section %d</h2>\n<p>%s%s<a href=\"/notes/%d.html\">note %d</a> %s</p>\n<p>%s<em>emphasis</em> %s&#8217;s <a href=\"https://other.example/ref/%d\">reference</a>.</p>\n",
			i, i, prose, prose, i, i, prose, prose, prose, i)
	}
	sb.WriteString("</body></html>")
	return []byte(sb.String())
}

// BenchmarkXHTMLSkip compares the XML path with the decoder reading every
// byte (path=decoder, the code before xmlskip.go) and with text skipped
// (path=skip). benchstat -col /path compares them.
func BenchmarkXHTMLSkip(b *testing.B) {
	base := mustURL(b, "http://www.example.com/doc/index.xhtml")
	for _, pg := range []struct {
		name string
		page []byte
	}{{"links", xhtmlLinksPage()}, {"article", xhtmlArticle()}} {
		for _, path := range []string{"decoder", "skip"} {
			b.Run("page="+pg.name+"/path="+path, func(b *testing.B) {
				e, _ := New(Options{})
				e.decodeText = path == "decoder"
				b.SetBytes(int64(len(pg.page)))
				b.ReportAllocs()
				cpu0 := cputime.Process()
				for b.Loop() {
					if _, err := e.Extract(bytes.NewReader(pg.page), base, xhtmlCT, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}
