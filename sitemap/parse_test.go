package sitemap

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

const base = "http://example.com/sitemap.xml"

func collect(t testing.TB, in []byte, base string, o Options) ([]Entry, Result, error) {
	t.Helper()
	var got []Entry
	res, err := Parse(bytes.NewReader(in), base, o, func(e Entry) error {
		got = append(got, e)
		return nil
	})
	return got, res, err
}

func locs(es []Entry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Loc)
	}
	return strings.Join(s, " ")
}

func gz(p []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(p)
	w.Close()
	return b.Bytes()
}

func TestParseSamples(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		kind     Kind
		want     string // space-separated locs
		err      error
		outOf    int
		invalid  int
	}{
		{name: "urlset", kind: KindURLSet, want: "http://example.com/ http://example.com/a?x=1&y=2",
			in: `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://example.com/</loc><lastmod>2005-01-01</lastmod><changefreq>monthly</changefreq><priority>0.8</priority></url>
  <url>
    <loc>
      http://example.com/a?x=1&amp;y=2
    </loc>
  </url>
</urlset>`},
		{name: "bom, cdata, image namespace", kind: KindURLSet, want: "http://example.com/c%20d http://example.com/e",
			in: "\ufeff" + `<?xml version="1.0" encoding="utf-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
<url><loc><![CDATA[http://example.com/c%20d]]></loc><image:image><image:loc>http://example.com/i.png</image:loc></image:image></url>
<!-- a comment --><url><loc>http://example.com/e</loc></url></urlset>`},
		{name: "no namespace, https rejected by path rule", kind: KindURLSet, want: "http://example.com/x", outOf: 2,
			in: `<urlset><url><loc>http://example.com/x</loc></url><url><loc>https://example.com/y</loc></url>` +
				`<url><loc>http://other.example/z</loc></url></urlset>`},
		{name: "index", kind: KindIndex, want: "http://example.com/s1.xml.gz http://example.com/s2.xml",
			in: `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://example.com/s1.xml.gz</loc><lastmod>2004-10-01T18:23:17+00:00</lastmod></sitemap>
<sitemap><loc>http://example.com/s2.xml</loc></sitemap></sitemapindex>`},
		{name: "invalid locs", kind: KindURLSet, want: "http://example.com/ok", invalid: 4,
			in: `<urlset><url><loc></loc></url><url><loc>/relative</loc></url><url><loc>mailto:a@b</loc></url>` +
				`<url><loc>ftp://example.com/</loc></url><url><loc>http://example.com/ok</loc></url></urlset>`},
		{name: "text", kind: KindText, want: "http://example.com/a http://example.com/b", invalid: 1,
			in: "\ufeffhttp://example.com/a\r\n\n  http://example.com/b  \nnot a url\n"},
		{name: "html", in: "<!DOCTYPE html><html><body>x</body></html>", err: ErrNotSitemap},
		{name: "empty", in: " \n", err: ErrNotSitemap},
		{name: "garbage", in: "\x00\x01\x02 binary\n", err: ErrNotSitemap, kind: KindText, invalid: 1},
		{name: "latin1", in: `<?xml version="1.0" encoding="ISO-8859-1"?><urlset></urlset>`, err: ErrNotSitemap},
		{name: "unclosed", kind: KindURLSet, want: "http://example.com/a", err: ErrMalformed,
			in: `<urlset><url><loc>http://example.com/a</loc></url><url><loc>http://example.com/b</loc>`},
		{name: "undefined entity", kind: KindURLSet, err: ErrMalformed,
			in: `<!DOCTYPE urlset [<!ENTITY a "http://example.com/boom">]><urlset><url><loc>&a;</loc></url></urlset>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, res, err := collect(t, []byte(tc.in), base, Options{})
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if res.Kind != tc.kind || locs(got) != tc.want || res.OutOfPath != tc.outOf || res.Invalid != tc.invalid {
				t.Fatalf("kind %v locs %q res %+v; want %v %q outOfPath %d invalid %d",
					res.Kind, locs(got), res, tc.kind, tc.want, tc.outOf, tc.invalid)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	in := `<urlset><url><loc>http://example.com/</loc><lastmod>2005-01-02T03:04:05+01:00</lastmod>` +
		`<changefreq>Weekly</changefreq><priority>0.8</priority></url>` +
		`<url><loc>http://example.com/b</loc><lastmod>yesterday</lastmod><priority>7</priority></url></urlset>`
	got, _, err := collect(t, []byte(in), base, Options{})
	if err != nil || len(got) != 2 {
		t.Fatal(got, err)
	}
	want := time.Date(2005, 1, 2, 2, 4, 5, 0, time.UTC)
	if !got[0].LastMod.Equal(want) || got[0].ChangeFreq != "weekly" || got[0].Priority != 0.8 {
		t.Errorf("got %+v", got[0])
	}
	if !got[1].LastMod.IsZero() || got[1].Priority != 0.5 {
		t.Errorf("got %+v", got[1])
	}
}

func TestLocationRule(t *testing.T) {
	in := "http://h.test/dir/a\nhttp://h.test/dir/sub/b\nhttp://h.test/other\nhttp://h.test/dir/../x\n" +
		"http://H.TEST:80/dir/c\nhttps://h.test/dir/d\nhttp://g.test/dir/e\n"
	for _, tc := range []struct {
		rule Rule
		base string
		want string
	}{
		{RulePath, "http://h.test/dir/sitemap.txt", "http://h.test/dir/a http://h.test/dir/sub/b http://H.TEST:80/dir/c"},
		{RuleHost, "http://h.test/robots.txt", "http://h.test/dir/a http://h.test/dir/sub/b http://h.test/other http://h.test/dir/../x http://H.TEST:80/dir/c"},
		{RuleNone, "", strings.Join(strings.Fields(in), " ")},
	} {
		got, _, err := collect(t, []byte(in), tc.base, Options{Rule: tc.rule})
		if err != nil || locs(got) != tc.want {
			t.Errorf("rule %d: %q, %v; want %q", tc.rule, locs(got), err, tc.want)
		}
	}
}

func urlset(n int, extra string) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "<url><loc>http://example.com/p%d.html</loc><priority>0.5</priority></url>\n", i)
	}
	b.WriteString(extra + "</urlset>\n")
	return b.Bytes()
}

func TestLimits(t *testing.T) {
	t.Run("50000 urls", func(t *testing.T) {
		n := 0
		res, err := Parse(bytes.NewReader(gz(urlset(ProtocolMaxURLs+7, ""))), base, Options{}, func(Entry) error { n++; return nil })
		if !errors.Is(err, ErrTooManyURLs) || n != ProtocolMaxURLs || res.URLs != n || res.Dropped != 7 || !res.Compressed {
			t.Fatalf("n %d res %+v err %v", n, res, err)
		}
	})
	t.Run("exactly the limit", func(t *testing.T) {
		_, res, err := collect(t, urlset(100, ""), base, Options{MaxURLs: 100})
		if err != nil || res.URLs != 100 || res.Dropped != 0 {
			t.Fatal(res, err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		in := urlset(1000, "")
		_, res, err := collect(t, in, base, Options{MaxBytes: int64(len(in))})
		if err != nil || res.URLs != 1000 || res.Bytes != int64(len(in)) {
			t.Fatalf("at the cap: %+v %v", res, err)
		}
		_, res, err = collect(t, in, base, Options{MaxBytes: int64(len(in)) - 1})
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("over the cap: %+v %v", res, err)
		}
	})
	t.Run("gzip bomb", func(t *testing.T) {
		// 200 MB of spaces inside <loc> inflate from ~200 KB; the cap cuts
		// them at 50 MB decompressed.
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write([]byte("http://example.com/a\n"))
		zeros := make([]byte, 1<<20)
		for i := range zeros {
			zeros[i] = ' '
		}
		for i := 0; i < 200; i++ {
			zw.Write(zeros)
		}
		zw.Close()
		_, res, err := collect(t, b.Bytes(), base, Options{})
		if !errors.Is(err, ErrTooLarge) || res.Bytes != ProtocolMaxBytes || res.URLs != 1 {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("long url", func(t *testing.T) {
		long := "http://example.com/" + strings.Repeat("x", 3000)
		_, res, err := collect(t, urlset(1, "<url><loc>"+long+"</loc></url>"), base, Options{})
		if err != nil || res.URLs != 1 || res.Invalid != 1 {
			t.Fatal(res, err)
		}
		_, res, err = collect(t, []byte("http://example.com/a\n"+long+"\nhttp://example.com/b\n"), base, Options{})
		if err != nil || res.URLs != 2 || res.Invalid != 1 {
			t.Fatal(res, err)
		}
	})
	t.Run("depth", func(t *testing.T) {
		in := "<urlset>" + strings.Repeat("<x>", 100) + strings.Repeat("</x>", 100) + "</urlset>"
		if _, _, err := collect(t, []byte(in), base, Options{}); !errors.Is(err, ErrTooDeep) {
			t.Fatal(err)
		}
	})
	t.Run("token", func(t *testing.T) {
		in := `<urlset><url a="` + strings.Repeat("y", 1<<20) + `"><loc>http://example.com/</loc></url></urlset>`
		if _, _, err := collect(t, []byte(in), base, Options{}); !errors.Is(err, ErrTokenTooLarge) {
			t.Fatal(err)
		}
		in = `<urlset><url><loc>http://example.com/` + strings.Repeat("y", 1<<20) + `</loc></url></urlset>`
		if _, _, err := collect(t, []byte(in), base, Options{}); !errors.Is(err, ErrTokenTooLarge) {
			t.Fatal(err)
		}
	})
	t.Run("billion laughs", func(t *testing.T) {
		in := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>` +
			`<urlset><url><loc>http://example.com/&lol2;</loc></url></urlset>`
		got, _, err := collect(t, []byte(in), base, Options{})
		if !errors.Is(err, ErrMalformed) || len(got) != 0 {
			t.Fatal(got, err)
		}
	})
}

func TestOptionsValidate(t *testing.T) {
	o := Options{MaxURLs: -1, MaxURLLength: 5, MaxDepth: 2, Rule: 9}
	o.EnsureDefaults()
	err := o.Validate()
	if !errors.Is(err, ErrOptions) || strings.Count(err.Error(), "\n") != 3 {
		t.Fatal(err)
	}
	if _, err := Parse(strings.NewReader(""), "relative", Options{}, nil); !errors.Is(err, ErrOptions) {
		t.Fatal(err)
	}
}

func TestCallbackError(t *testing.T) {
	stop := errors.New("stop")
	for _, in := range []string{string(urlset(5, "")), "http://example.com/a\nhttp://example.com/b\n"} {
		n := 0
		_, err := Parse(strings.NewReader(in), base, Options{}, func(Entry) error { n++; return stop })
		if err != stop || n != 1 {
			t.Fatal(err, n)
		}
	}
}

type mapFetcher map[string][]byte

func (m mapFetcher) Fetch(_ context.Context, u string) (io.ReadCloser, error) {
	b, ok := m[u]
	if !ok {
		return nil, errors.New("404")
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func TestWalker(t *testing.T) {
	index := func(children ...string) []byte {
		s := "<sitemapindex>"
		for _, c := range children {
			s += "<sitemap><loc>" + c + "</loc></sitemap>"
		}
		return []byte(s + "</sitemapindex>")
	}
	h := "http://h.test/"
	f := mapFetcher{
		h + "index.xml":  index(h+"a.xml.gz", h+"b.txt", h+"nested.xml", h+"missing.xml", h+"a.xml.gz", "http://x.test/c.xml"),
		h + "a.xml.gz":   gz([]byte("<urlset><url><loc>http://h.test/1</loc></url></urlset>")),
		h + "b.txt":      []byte("http://h.test/2\nhttp://h.test/3\n"),
		h + "nested.xml": index(h + "deep.xml"),
		h + "deep.xml":   []byte("http://h.test/deep\n"),
	}
	var got []string
	w := Walker{Fetcher: f}
	st, err := w.Walk(context.Background(), h+"index.xml", func(file string, e Entry) error {
		got = append(got, e.Loc)
		return nil
	})
	want := WalkStats{Files: 5, Indexes: 2, Failed: 1, TooDeep: 1, Skipped: 1, URLs: 3, OutOfPath: 1}
	if err != nil || strings.Join(got, " ") != "http://h.test/1 http://h.test/2 http://h.test/3" || st != want {
		t.Fatalf("%q %+v %v", got, st, err)
	}
	w.MaxIndexDepth = 2
	got = nil
	if st, _ = w.Walk(context.Background(), h+"index.xml", func(_ string, e Entry) error {
		got = append(got, e.Loc)
		return nil
	}); len(got) != 4 || st.TooDeep != 0 {
		t.Fatal(got, st)
	}
}

func BenchmarkParse(b *testing.B) {
	in := urlset(10000, "")
	for _, c := range []struct {
		name string
		in   []byte
	}{{"xml", in}, {"gzip", gz(in)}, {"text", bytes.Repeat([]byte("http://example.com/some/page.html\n"), 10000)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			n := 0
			for b.Loop() {
				res, err := Parse(bytes.NewReader(c.in), base, Options{}, func(Entry) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				n += res.URLs
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "URLs/s")
		})
	}
}
