package extract

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

var fuzzDocs = []string{
	`<a href="x.html">x</a><img src=i.png srcset="a.png 1x, b,c.png 2x (w, x)">`,
	`<base href="http://b.example/d/"><a href=../up><meta http-equiv=refresh content="0; url='/r'">`,
	`<meta charset="shift_jis"><a href="/` + "\x93\xfa\x96\x7b" + `">`,
	`<noscript><a href=/ns></noscript><script>"<a href=/no>"</script>`,
	"<a href=\"\x00\t\n /\x80\xff\">",
	`<form action=""><object data="//h:99999/"><area href="http://[::1]/">`,
	`<<<a/href=/p>><a href=/a/b/a/b/a/b/a/b>`,
	`<a href="?a=1&amp;b=2&amp;amp;c" title='&amp;&amp;'><a href=x&amp;y&amp>`,
	`<meta name=robots content="noindex, nofollow"><META NAME="Sextant" CONTENT=none><link rel="canonical alternate" href="/c?a&amp;b">`,
	`<a href=/n rel=nofollow><a rel="ugc nofollow" href=/n><a href=/n><area rel=NOFOLLOW href=/m><form rel=nofollow action=/f>`,
}

// FuzzExtract: the extractor never panics or fails on in-memory input,
// respects its limits, and emits only canonical URLs with known tags.
func FuzzExtract(f *testing.F) {
	for _, d := range fuzzDocs {
		f.Add([]byte(d), "text/html")
		f.Add([]byte(d), "text/html; charset=windows-1252")
	}
	f.Add(benchPage(), "")
	base, err := urlnorm.Parse("http://fuzz.example/dir/page.html")
	if err != nil {
		f.Fatal(err)
	}
	opts := Options{MaxLinks: 40, MaxAttrLen: 300, MaxTokenBytes: 2048, MaxBytes: 16 << 10, RobotsToken: "sextant"}
	e, err := New(opts)
	if err != nil {
		f.Fatal(err)
	}
	slow, _ := New(opts)
	slow.slowAttrs = true
	f.Fuzz(func(t *testing.T, doc []byte, contentType string) {
		n := 0
		var got, want []Link
		res, err := e.Extract(bytes.NewReader(doc), base, contentType, func(l Link) {
			got = append(got, l)
			n++
			if l.Tag == "" || l.Attr == "" || attrName(l.Tag, l.Attr) != l.Attr && l.Attr != "content" {
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
		// The raw-attribute fast path must agree with Tokenizer.TagAttr.
		res2, _ := slow.Extract(bytes.NewReader(doc), base, contentType, func(l Link) { want = append(want, l) })
		if fmt.Sprint(got) != fmt.Sprint(want) || res != res2 {
			t.Fatalf("raw attributes %v %+v\nTagAttr        %v %+v", got, res, want, res2)
		}
	})
}

// FuzzRefresh and FuzzSrcset: the attribute parsers never panic and
// return pieces of their input.
func FuzzRefresh(f *testing.F) {
	for _, s := range []string{"0; url=/x", "5 ; URL = '/q' ", "0, /c", ".5;url=\"a\"b", "x", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		u, ok := refreshURL(v)
		if ok && !bytes.Contains(v, u) {
			t.Fatalf("refreshURL(%q) = %q, not part of the input", v, u)
		}
	})
}

func FuzzSrcset(f *testing.F) {
	for _, s := range []string{"a 1x, b 2x", "a,b c", ",,(,),", "a (x,y), b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		total := 0
		_ = eachSrcset(v, func(u []byte) error {
			if len(u) == 0 || !bytes.Contains(v, u) || bytes.ContainsAny(u, " \t\n\r\f") {
				t.Fatalf("srcset %q: bad candidate %q", v, u)
			}
			total += len(u)
			return nil
		})
		if total > len(v) {
			t.Fatalf("srcset %q: candidates longer than input", v)
		}
	})
}

func attrName(tag, attr string) string {
	a, _ := attrOf(tag, []byte(attr))
	return a
}

// checkResult fails t unless an extraction of doc that emitted n links
// kept within opts' limits and returned a consistent Result (the fuzzers'
// common invariants).
func checkResult(t *testing.T, opts Options, doc []byte, n int, res Result) {
	t.Helper()
	if n != res.Links || n > opts.MaxLinks || res.Bytes > opts.MaxBytes || res.Bytes > int64(len(doc)) {
		t.Fatalf("limits: %d links emitted, result %+v", n, res)
	}
	if res.NoFollow < 0 || res.Robots&^(NoFollow|NoIndex) != 0 {
		t.Fatalf("result %+v", res)
	}
	if c, err := urlnorm.Normalize(res.Canonical); res.Canonical != "" && (err != nil || c != res.Canonical) {
		t.Fatalf("non-canonical Canonical %q", res.Canonical)
	}
}
