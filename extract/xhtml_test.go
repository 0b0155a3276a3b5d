package extract

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

const xhtmlCT = "application/xhtml+xml"

// The bug of issue #24: read with HTML rules, a self-closing <script/> in
// the head swallows the body; read as XML it does not.
func TestXHTMLSelfClosingScript(t *testing.T) {
	doc := `<?xml version="1.0"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head>` +
		`<script src="s.js"/></head><body><a href="b.xhtml">b</a></body></html>`
	want := []string{"script src http://example.com/dir/s.js", "a href http://example.com/dir/b.xhtml"}
	for _, ct := range []string{xhtmlCT, "Application/XHTML+XML; charset=utf-8", "application/xml", "text/xml"} {
		got, res := collect(t, Options{}, doc, ct)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: links (-want +got):\n%s", ct, diff)
		}
		if res.Truncated != NotTruncated || res.Links != 2 {
			t.Errorf("%s: result %+v", ct, res)
		}
	}
	// Served as text/html, a browser swallows the body too: so do we.
	got, _ := collect(t, Options{}, doc, "text/html")
	if diff := cmp.Diff(want[:1], got); diff != "" {
		t.Errorf("text/html: links (-want +got):\n%s", diff)
	}
}

// Well-formed XHTML without self-closing non-void elements: the XML path
// finds exactly what the HTML path finds (same table, same rules).
func TestXHTMLSameLinksAsHTML(t *testing.T) {
	head := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<!DOCTYPE html>` + "\n" +
		`<html xmlns="http://www.w3.org/1999/xhtml" xmlns:xlink="http://www.w3.org/1999/xlink"><head><title>t &amp; &lt;a href="/no"&gt;</title>`
	for _, body := range []string{
		`<a href="x.html">x</a><a href="x.html">dup</a>`,
		`<map name="m"><area href="../a" alt=""/></map><link rel="stylesheet" href="s.css"/>`,
		`<img src="i.png" srcset="i2.png 2x, i3.png 3x" alt=""/><picture><source srcset="a.webp 1x,b.webp 2x"/></picture>`,
		`<script src="/js/a.js"></script><iframe src="f.html"></iframe><embed src="e.swf"/>`,
		`<audio src="a.mp3"></audio><video src="v.mp4"><track src="t.vtt"/></video>`,
		`<form action="/search" method="get"><input name="q"/></form><object data="o.svg"></object>`,
		`<a href="q?a=1&amp;b=2&amp;c=&#233;&#x41;">e</a><p>&nbsp;&copy;</p><a href="#top">t</a>`,
		`<a href="HTTP://Other.ORG:80/./a/../b">o</a><a href="//cdn.example.net/x">c</a><a href="  /sp ">s</a>`,
		`<a href=" JavaScript:go()">j</a><img src="data:image/png,xx" alt=""/><a href="http://[bad/">bad</a>`,
		`<a name="x" title="/no">n</a><div href="/no"></div><p src="/no">p</p>`,
		`<script>//<![CDATA[
var s = '<a href="/no">' + (1 < 2);
//]]></script><a href="/yes">y</a>`,
		`<style>a[href="/no"] { color: red }</style><textarea>&lt;a href="/no"&gt;</textarea><a href="/yes2">y</a>`,
		`<noscript><img src="/pixel.gif" alt=""/></noscript>`,
		`<!-- <a href="/no"> --><a href="/yes">y</a>`,
		`<base href="http://b.example/d/"/><base href="/ignored/"/><a href="../up">u</a>`,
		`<meta http-equiv="Refresh" content="0; url='/r'"/><meta content="5;URL=/r2" http-equiv="refresh"/>`,
		`<svg xmlns="http://www.w3.org/2000/svg"><a xlink:href="/no-xlink"><text>x</text></a><a href="/svg-a"><text>y</text></a></svg>`,
		`<a href="/a" href="/b">first wins</a><img src="é/ü.png" alt=""/>`,
	} {
		doc := head + "</head><body>" + body + "</body></html>"
		want, wres := collect(t, Options{}, doc, "text/html")
		got, gres := collect(t, Options{}, doc, xhtmlCT)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s\nXML path differs from HTML path (-html +xml):\n%s", body, diff)
		}
		if wres != gres {
			t.Errorf("%s\nresults differ: html %+v\nxml  %+v", body, wres, gres)
		}
		if len(got) == 0 && !strings.Contains(body, "/no") && !strings.Contains(strings.ToLower(body), "javascript") {
			t.Errorf("%s: no links at all", body)
		}
	}
}

// application/xml and text/xml: links only when the root is XHTML's html.
func TestXHTMLServedAsXML(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want int
	}{
		{`<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><a href="/a">a</a></body></html>`, 1},
		{`<!-- c --><!DOCTYPE html><h:html xmlns:h="http://www.w3.org/1999/xhtml"><h:a href="/a">a</h:a></h:html>`, 1},
		{`<html><body><a href="/a">no namespace</a></body></html>`, 0},
		{`<rss version="2.0"><channel><link href="/feed"/><a href="/x"/></channel></rss>`, 0},
		{`<svg xmlns="http://www.w3.org/2000/svg"><a href="/x"/></svg>`, 0},
		{`<?xml version="1.0"?><<<broken`, 0},
	} {
		for _, ct := range []string{"application/xml", "text/xml; charset=utf-8"} {
			got, res := collect(t, Options{}, tc.doc, ct)
			if len(got) != tc.want || res.Links != tc.want {
				t.Errorf("%s as %s: links %q, want %d", tc.doc, ct, got, tc.want)
			}
			if is := IsHTML(ct, []byte(tc.doc)); is != (tc.want > 0) {
				t.Errorf("IsHTML(%q, %q) = %v", ct, tc.doc, is)
			}
		}
		// As application/xhtml+xml any root is read.
		if got, _ := collect(t, Options{}, tc.doc, xhtmlCT); len(got) == 0 && !strings.Contains(tc.doc, "broken") {
			t.Errorf("%s as %s: no links", tc.doc, xhtmlCT)
		}
	}
}

// Malformed XML: links before the error come from the XML parse (so the
// self-closing script before it does no harm), the failing token and the
// rest from the HTML tokenizer; nothing is emitted twice.
func TestXHTMLMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"bare < in text",
			`<html xmlns="http://www.w3.org/1999/xhtml"><head><script src="s.js"/></head><body><a href="1">1</a><p>a < b</p><a href="2">2</a><a href="1">dup</a></body></html>`,
			[]string{"script src http://example.com/dir/s.js", "a href http://example.com/dir/1", "a href http://example.com/dir/2"}},
		{"unquoted URL attribute: the failing tag itself is found",
			`<html xmlns="http://www.w3.org/1999/xhtml"><body><a href="1">1</a><a href=/x/y.html>x</a><img src=i.png></body></html>`,
			[]string{"a href http://example.com/dir/1", "a href http://example.com/x/y.html", "img src http://example.com/dir/i.png"}},
		{"base before the error holds after it",
			`<html xmlns="http://www.w3.org/1999/xhtml"><head><base href="http://b.example/d/"/></head><body><p>x</p></div></div></div></body></html><a href="z">`,
			[]string{"a href http://b.example/d/z"}},
		{"control character",
			"<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><a href=\"1\">1</a><p>\x0c</p><a href=\"2\">2</a></body></html>",
			[]string{"a href http://example.com/dir/1", "a href http://example.com/dir/2"}},
		{"invalid UTF-8",
			"<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><a href=\"1\">1</a><p>\xff\xfe</p><a href=\"2\">2</a></body></html>",
			[]string{"a href http://example.com/dir/1", "a href http://example.com/dir/2"}},
		{"truncated mid-tag",
			`<html xmlns="http://www.w3.org/1999/xhtml"><body><a href="1">1</a><a href="2`,
			[]string{"a href http://example.com/dir/1"}},
	} {
		got, res := collect(t, Options{}, tc.doc, xhtmlCT)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: links (-want +got):\n%s", tc.name, diff)
		}
		if res.Truncated != NotTruncated {
			t.Errorf("%s: truncated %v", tc.name, res.Truncated)
		}
	}
}

func TestXHTMLLimits(t *testing.T) {
	const open = `<html xmlns="http://www.w3.org/1999/xhtml"><body>`
	var b strings.Builder
	b.WriteString(open)
	for i := range 50 {
		b.WriteString(`<a href="/p` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `"/>`)
	}
	got, res := collect(t, Options{MaxLinks: 7}, b.String(), xhtmlCT)
	if len(got) != 7 || res.Truncated != TruncatedLinks {
		t.Errorf("MaxLinks 7: %d links, %v", len(got), res.Truncated)
	}
	big := open + `<a href="/1"/><p>` + strings.Repeat("x", 10000) + `</p><a href="/2"/>`
	got, res = collect(t, Options{MaxTokenBytes: 4096}, big, xhtmlCT)
	if len(got) != 1 || res.Truncated != TruncatedToken {
		t.Errorf("MaxTokenBytes: links %q, %v", got, res.Truncated)
	}
	big = open + `<a href="/1"/><a title="` + strings.Repeat("y", 10000) + `" href="/2"/>`
	got, res = collect(t, Options{MaxTokenBytes: 4096}, big, xhtmlCT)
	if len(got) != 1 || res.Truncated != TruncatedToken {
		t.Errorf("MaxTokenBytes (huge tag): links %q, %v", got, res.Truncated)
	}
	got, res = collect(t, Options{MaxBytes: int64(len(open) + 20)}, open+`<a href="/1"/>`+strings.Repeat(`<a href="/2"/>`, 10), xhtmlCT)
	if len(got) != 1 || res.Truncated != TruncatedBytes || res.Bytes != int64(len(open)+20) {
		t.Errorf("MaxBytes: links %q, %+v", got, res)
	}
	got, res = collect(t, Options{MaxAttrLen: 100}, open+`<a href="/`+strings.Repeat("z", 200)+`"/><a href="/ok"/>`, xhtmlCT)
	if len(got) != 1 || res.TooLong != 1 {
		t.Errorf("MaxAttrLen: links %q, %+v", got, res)
	}
	// Nesting past maxXMLDepth: the HTML tokenizer (no stack) takes over
	// and still finds the links after it.
	deep := open + `<a href="/before"/>` + strings.Repeat("<div>", 3*maxXMLDepth) + `<a href="/deep">d</a>` + strings.Repeat("</div>", 3*maxXMLDepth) + `<a href="/after"/>`
	got, _ = collect(t, Options{}, deep, xhtmlCT)
	want := []string{"a href http://example.com/before", "a href http://example.com/deep", "a href http://example.com/after"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deep nesting (-want +got):\n%s", diff)
	}
}

func TestXHTMLCharset(t *testing.T) {
	body := `<html xmlns="http://www.w3.org/1999/xhtml"><body><a href="/caf` + "\xe9" + `">c</a></body></html>`
	for _, tc := range []struct{ decl, ct, charset, want string }{
		{`<?xml version="1.0" encoding="ISO-8859-1"?>`, xhtmlCT, "windows-1252", "http://example.com/caf%C3%A9"},
		{`<?xml version='1.0' encoding = 'latin1' ?>`, "text/xml", "windows-1252", "http://example.com/caf%C3%A9"},
		// The Content-Type's charset wins over the declaration (RFC 7303).
		{`<?xml version="1.0" encoding="utf-8"?>`, xhtmlCT + "; charset=iso-8859-1", "windows-1252", "http://example.com/caf%C3%A9"},
	} {
		got, res := collect(t, Options{}, tc.decl+body, tc.ct)
		if len(got) != 1 || got[0] != "a href "+tc.want || res.Charset != tc.charset {
			t.Errorf("%s %s: links %q, charset %q", tc.decl, tc.ct, got, res.Charset)
		}
	}
	if got := xmlDeclEncoding([]byte("\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"Shift_JIS\"?><x/>")); got != "Shift_JIS" {
		t.Errorf("xmlDeclEncoding after BOM = %q", got)
	}
	for _, s := range []string{`<?xml version="1.0"?>`, `<?xmlx encoding="a"?>`, `<x encoding="a"/>`, `<?xml encoding=a?>`, `<?xml encoding="a`} {
		if got := xmlDeclEncoding([]byte(s)); got != "" {
			t.Errorf("xmlDeclEncoding(%q) = %q, want none", s, got)
		}
	}
}

// One Extractor alternates HTML and XHTML documents: no state leaks.
func TestXHTMLReuse(t *testing.T) {
	e, _ := New(Options{})
	base := mustURL(t, docURL)
	for i := range 4 {
		ct, doc := "text/html", `<a href="/h">`
		if i%2 == 1 {
			ct, doc = xhtmlCT, `<html xmlns="http://www.w3.org/1999/xhtml"><a href="/x"/><p>`+strings.Repeat("w", 5000)+`</p></html>`
		}
		var got []string
		if _, err := e.Extract(strings.NewReader(doc), base, ct, func(l Link) { got = append(got, l.URL) }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("document %d (%s): %q", i, ct, got)
		}
	}
}

var xhtmlFuzzDocs = []string{
	`<?xml version="1.0"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head><script src="s.js"/></head><body><a href="b.xhtml">b</a></body></html>`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><base href="http://b.example/d/"/><meta http-equiv="refresh" content="0; url=/r"/><img src="i" srcset="a 1x, b 2x"/></html>`,
	`<?xml version="1.0" encoding="ISO-8859-1"?><html xmlns="http://www.w3.org/1999/xhtml"><a href="/caf` + "\xe9" + `">&nbsp;</a></html>`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><p>a < b</p><a href=/x>x</a><script><![CDATA[<a href="/no">]]></script></html>`,
	`<!DOCTYPE x [<!ENTITY e "v">]><h:html xmlns:h="http://www.w3.org/1999/xhtml"><h:a href="&e;"/></h:html>`,
	`<a><b><c><d></c></b></a></x></y><a href="/z"/>`,
	`<html xmlns="http://www.w3.org/1999/xhtml"><meta name="robots" content="noindex"/><meta name="sextant" content="none"/><link rel="canonical" href="/c"/><a rel="nofollow" href="/n"/><a href="/n"/></html>`,
}

// FuzzXHTML: the XML path never panics or fails on in-memory input,
// respects its limits, emits only canonical URLs, and emits no URL twice.
func FuzzXHTML(f *testing.F) {
	for _, d := range xhtmlFuzzDocs {
		f.Add([]byte(d), xhtmlCT)
		f.Add([]byte(d), "text/xml")
	}
	base, err := urlnorm.Parse("http://fuzz.example/dir/page.xhtml")
	if err != nil {
		f.Fatal(err)
	}
	opts := Options{MaxLinks: 40, MaxAttrLen: 300, MaxTokenBytes: 2048, MaxBytes: 16 << 10, RobotsToken: "sextant"}
	e, err := New(opts)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte, contentType string) {
		if kindOf(contentType) == kindHTML {
			contentType = xhtmlCT
		}
		seen := map[string]bool{}
		n := 0
		res, err := e.Extract(bytes.NewReader(doc), base, contentType, func(l Link) {
			n++
			if seen[l.URL] {
				t.Errorf("emitted %q twice", l.URL)
			}
			seen[l.URL] = true
			if a, _ := attrOf(l.Tag, []byte(l.Attr)); a != l.Attr && l.Attr != "content" {
				t.Errorf("unexpected tag/attr %q/%q", l.Tag, l.Attr)
			}
			if c, err := urlnorm.Normalize(l.URL); err != nil || c != l.URL {
				t.Errorf("emitted non-canonical URL %q (%q, %v)", l.URL, c, err)
			}
		})
		if err != nil {
			t.Fatalf("Extract: %v", err)
		}
		checkResult(t, opts, doc, n, res)
		if len(e.xsrc.tok) > opts.MaxTokenBytes {
			t.Fatalf("token buffer %d > MaxTokenBytes", len(e.xsrc.tok))
		}
	})
}

// BenchmarkExtractXHTML compares the XML path with the HTML path on one
// well-formed XHTML page (~100 KB, 1,000 links), interleaved page by page.
func BenchmarkExtractXHTML(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title>` +
		`<link rel="stylesheet" href="/s.css"/></head><body>`)
	for i := range 1000 {
		fmt.Fprintf(&sb, `<p class="c">Some text &amp; more text, item %d.</p><a href="/page/%d.html" title="x">l</a>`+"\n", i, i)
	}
	sb.WriteString("</body></html>")
	page := []byte(sb.String())
	base := mustURL(b, "http://www.example.com/doc/index.xhtml")
	e, _ := New(Options{})
	var tx, th time.Duration
	for b.Loop() {
		t0 := time.Now()
		if res, err := e.Extract(bytes.NewReader(page), base, xhtmlCT, nil); err != nil || res.Links != 1001 {
			b.Fatal(res, err)
		}
		t1 := time.Now()
		if res, err := e.Extract(bytes.NewReader(page), base, "text/html", nil); err != nil || res.Links != 1001 {
			b.Fatal(res, err)
		}
		tx += t1.Sub(t0)
		th += time.Since(t1)
	}
	mb := float64(len(page)) * float64(b.N) / 1e6
	b.ReportMetric(mb/tx.Seconds(), "MB/s-xml")
	b.ReportMetric(mb/th.Seconds(), "MB/s-html")
}
