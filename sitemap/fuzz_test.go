package sitemap

import (
	"bytes"
	"testing"
)

// fuzzOpts are small limits so that the fuzzer reaches them.
var fuzzOpts = Options{MaxURLs: 20, MaxBytes: 1 << 16, MaxURLLength: 256, MaxDepth: 6, MaxTokenBytes: 1024}

func fuzzParse(t *testing.T, in []byte) {
	n := 0
	res, _ := Parse(bytes.NewReader(in), "http://example.com/", fuzzOpts, func(e Entry) error {
		n++
		if len(e.Loc) > fuzzOpts.MaxURLLength {
			t.Fatalf("loc of %d bytes", len(e.Loc))
		}
		return nil
	})
	if n > fuzzOpts.MaxURLs || res.URLs != n || res.Bytes > fuzzOpts.MaxBytes {
		t.Fatalf("n %d res %+v", n, res)
	}
}

func FuzzParseXML(f *testing.F) {
	f.Add(urlset(3, ""))
	f.Add([]byte(`<sitemapindex><sitemap><loc>http://example.com/a.xml</loc></sitemap></sitemapindex>`))
	f.Add([]byte(`<urlset><url><loc><![CDATA[http://example.com/&]]></loc><priority>x</priority></url></urlset>`))
	f.Fuzz(fuzzParse)
}

func FuzzParseText(f *testing.F) {
	f.Add([]byte("http://example.com/a\nhttp://example.com/b\r\n"))
	f.Add([]byte("\ufeff http://example.com/\xff\n"))
	f.Fuzz(fuzzParse)
}

func FuzzParseGzip(f *testing.F) {
	f.Add(gz(urlset(2, "")))
	f.Add(gz([]byte("http://example.com/a\n")))
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzParse(t, in)
		fuzzParse(t, gz(in))
	})
}
