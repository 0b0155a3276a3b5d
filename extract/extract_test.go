package extract

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"

	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

const docURL = "http://Example.com/dir/page.html"

func mustURL(t testing.TB, s string) *urlnorm.URL {
	t.Helper()
	u, err := urlnorm.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// collect runs an extractor over doc and returns "tag attr url" lines.
func collect(t testing.TB, opts Options, doc, contentType string) ([]string, Result) {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	res, err := e.Extract(strings.NewReader(doc), mustURL(t, docURL), contentType, func(l Link) {
		got = append(got, l.Tag+" "+l.Attr+" "+l.URL)
	})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	return got, res
}

func TestTagsAndAttributes(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"a", `<a href="x.html">x</a>`, []string{"a href http://example.com/dir/x.html"}},
		{"A upper", `<A HREF="/Y">`, []string{"a href http://example.com/Y"}},
		{"area", `<map><area href="../a"></map>`, []string{"area href http://example.com/a"}},
		{"link", `<link rel=stylesheet href=s.css>`, []string{"link href http://example.com/dir/s.css"}},
		{"img src+srcset", `<img src="i.png" srcset="i2.png 2x, i3.png 3x">`, []string{
			"img src http://example.com/dir/i.png", "img srcset http://example.com/dir/i2.png", "img srcset http://example.com/dir/i3.png"}},
		{"script", `<script src="/js/a.js"></script>`, []string{"script src http://example.com/js/a.js"}},
		{"iframe", `<iframe src="f.html"></iframe>`, []string{"iframe src http://example.com/dir/f.html"}},
		{"frame", `<frameset><frame src="fr.html"></frameset>`, []string{"frame src http://example.com/dir/fr.html"}},
		{"embed", `<embed src="e.swf">`, []string{"embed src http://example.com/dir/e.swf"}},
		{"source", `<picture><source srcset="a.webp 1x,b.webp 2x" type=image/webp><source src=c.mp4></picture>`, []string{
			"source srcset http://example.com/dir/a.webp", "source srcset http://example.com/dir/b.webp", "source src http://example.com/dir/c.mp4"}},
		{"audio/video/track", `<audio src=a.mp3></audio><video src=v.mp4><track src=t.vtt></video>`, []string{
			"audio src http://example.com/dir/a.mp3", "video src http://example.com/dir/v.mp4", "track src http://example.com/dir/t.vtt"}},
		{"form", `<form action="/search" method=get></form>`, []string{"form action http://example.com/search"}},
		{"object", `<object data="o.svg"></object>`, []string{"object data http://example.com/dir/o.svg"}},
		{"self-closing", `<img src="s.png"/>`, []string{"img src http://example.com/dir/s.png"}},
		{"entities", `<a href="q?a=1&amp;b=2&lt;">`, []string{"a href http://example.com/dir/q?a=1&b=2%3C"}},
		{"fragment dropped", `<a href="#top"></a><a href="p#s">`, []string{"a href http://example.com/dir/page.html", "a href http://example.com/dir/p"}},
		{"absolute, case, port", `<a href="HTTP://Other.ORG:80/./a/../b">`, []string{"a href http://other.org/b"}},
		{"protocol-relative", `<a href="//cdn.example.net/x">`, []string{"a href http://cdn.example.net/x"}},
		{"whitespace trimmed", "<a href=\"  \n/sp \">", []string{"a href http://example.com/sp"}},
		{"non-http kept (filter drops)", `<a href="mailto:a@b">`, []string{"a href mailto:a@b"}},
		{"javascript: and data: skipped", `<a href=" JavaScript:go()"><img src="DATA:image/png,xx"><a href="javascript">`, []string{"a href http://example.com/dir/javascript"}},
		{"ignored attributes and tags", `<a name=x title="/no"><div href="/no"><img alt="/no"><p src=/no>`, nil},
		{"invalid skipped", `<a href="http://[bad/">`, nil},
		{"links in script text are not links", `<script>var s = '<a href="/no">';</script><a href=/yes>`, []string{"a href http://example.com/yes"}},
		{"noscript contents", `<noscript><img src="/pixel.gif"></noscript>`, []string{"img src http://example.com/pixel.gif"}},
		{"comment", `<!-- <a href="/no"> --><a href=/yes>`, []string{"a href http://example.com/yes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := collect(t, Options{}, tc.doc, "text/html")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("links (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBase(t *testing.T) {
	doc := `<a href="before.html"><base href="http://Base.example/b/"><a href="after.html">` +
		`<base href="http://second.example/"><a href="/abs"><meta http-equiv=refresh content="0;url=r">`
	got, res := collect(t, Options{}, doc, "")
	want := []string{
		"a href http://example.com/dir/before.html",
		"a href http://base.example/b/after.html",
		"a href http://base.example/abs",
		"meta content http://base.example/b/r",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if res.Base != "http://base.example/b/" {
		t.Errorf("Result.Base = %q", res.Base)
	}
	// A relative base resolves against the document; javascript: is ignored.
	got, _ = collect(t, Options{}, `<base href="../other/"><a href=x>`, "")
	if diff := cmp.Diff([]string{"a href http://example.com/other/x"}, got); diff != "" {
		t.Error(diff)
	}
	got, _ = collect(t, Options{}, `<base href="javascript:alert(1)"><a href=x>`, "")
	if diff := cmp.Diff([]string{"a href http://example.com/dir/x"}, got); diff != "" {
		t.Error(diff)
	}
}

func TestMetaRefresh(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{"0; url=/next", "/next"},
		{"0;URL=/next", "/next"},
		{"5 ; Url = '/quoted' ", "/quoted"},
		{`0; url=&quot;/dq&quot;trailing`, "/dq"},
		{"0, /comma", "/comma"},
		{"0 /space", "/space"},
		{"0; 'q.html'", "/dir/q.html"},
		{"1.5; url=/dec", "/dec"},
		{".5; url=/dot", "/dot"},
		{"0; urlx.html", "/dir/urlx.html"},
		{"0; u.html", "/dir/u.html"},
		{"0; url=/a b", "/a%20b"},
		{"0; url='/unterminated", "/unterminated"},
		{"0", ""},
		{"0;", ""},
		{"x; url=/no", ""},
		{"0x; url=/no", ""},
		{"", ""},
	} {
		doc := `<meta http-equiv="Refresh" content="` + tc.content + `">`
		got, _ := collect(t, Options{}, doc, "")
		var want []string
		if tc.want != "" {
			want = []string{"meta content http://example.com" + tc.want}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("content=%q (-want +got):\n%s", tc.content, diff)
		}
	}
	// content without http-equiv=refresh is not a link
	got, _ := collect(t, Options{}, `<meta name=description content="0; url=/no"><meta http-equiv=refreshx content="0;url=/no">`, "")
	if len(got) != 0 {
		t.Errorf("got %v", got)
	}
	// attribute order does not matter
	got, _ = collect(t, Options{}, `<meta content="0;url=/o" http-equiv=refresh>`, "")
	if diff := cmp.Diff([]string{"meta content http://example.com/o"}, got); diff != "" {
		t.Error(diff)
	}
}

func TestSrcset(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want []string
	}{
		{"a.png", []string{"a.png"}},
		{"a.png 1x, b.png 2x", []string{"a.png", "b.png"}},
		{"a.png 100w,b.png 200w", []string{"a.png", "b.png"}},
		{"a,b.png 1x, c.png", []string{"a,b.png", "c.png"}},
		{"a.png,b.png", []string{"a.png,b.png"}},
		{"a.png, b.png", []string{"a.png", "b.png"}},
		{"a.png,, ,b.png", []string{"a.png", "b.png"}},
		{"  ,a.png 1x (weird, desc), b.png", []string{"a.png", "b.png"}},
		{"data:image/png;base64,AAA= 1x, c.png 2x", []string{"data:image/png;base64,AAA=", "c.png"}},
		{"", nil},
		{" , , ", nil},
	} {
		var got []string
		_ = eachSrcset([]byte(tc.v), func(u []byte) error { got = append(got, string(u)); return nil })
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("srcset %q (-want +got):\n%s", tc.v, diff)
		}
	}
}

func TestCharsets(t *testing.T) {
	w1252, err := charmap.Windows1252.NewEncoder().String(`<a href="/café?q=é">`)
	if err != nil {
		t.Fatal(err)
	}
	sjis, err := japanese.ShiftJIS.NewEncoder().String(`<meta charset="Shift_JIS"><a href="/日本語/ページ?q=検索">`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc, ct, wantURL, wantCharset string
	}{
		{"utf-8 undeclared", `<a href="/café">`, "text/html", "http://example.com/caf%C3%A9", "utf-8"},
		{"windows-1252 from header", w1252, "text/html; charset=windows-1252", "http://example.com/caf%C3%A9?q=%C3%A9", "windows-1252"},
		{"latin1 from header", w1252, "text/html; charset=ISO-8859-1", "http://example.com/caf%C3%A9?q=%C3%A9", "windows-1252"},
		{"windows-1252 sniffed (invalid utf-8)", w1252, "", "http://example.com/caf%C3%A9?q=%C3%A9", "windows-1252"},
		{"windows-1252 from meta, ascii prefix", `<meta charset="windows-1252">` + strings.Repeat(" ", 1100) + w1252, "text/html", "http://example.com/caf%C3%A9?q=%C3%A9", "windows-1252"},
		{"ascii prefix then utf-8", strings.Repeat(" ", 1100) + `<a href="/café">`, "text/html", "http://example.com/caf%C3%A9", "utf-8"},
		{"shift_jis from meta", sjis, "text/html", "http://example.com/%E6%97%A5%E6%9C%AC%E8%AA%9E/%E3%83%9A%E3%83%BC%E3%82%B8?q=%E6%A4%9C%E7%B4%A2", "shift_jis"},
		{"header beats meta", sjis, "text/html; charset=shift_jis", "http://example.com/%E6%97%A5%E6%9C%AC%E8%AA%9E/%E3%83%9A%E3%83%BC%E3%82%B8?q=%E6%A4%9C%E7%B4%A2", "shift_jis"},
		{"bogus header charset falls back", `<a href="/é">`, "text/html; charset=no-such", "http://example.com/%C3%A9", "utf-8"},
		{"bogus header and meta, invalid utf-8 text", "<meta charset=\"x-bogus-charset\"><p>\xff\xe9</p><a href=\"/x\">", "text/html; charset=x-bogus-charset", "http://example.com/x", "windows-1252"},
		{"meta utf-16 means utf-8 (HTML standard)", `<meta charset="utf-16"><a href="/é">`, "text/html", "http://example.com/%C3%A9", "utf-8"},
		{"header windows-1252 beats meta utf-16", `<meta charset="utf-16"><a href="/x">`, "text/html; charset=windows-1252", "http://example.com/x", "windows-1252"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, res := collect(t, Options{}, tc.doc, tc.ct)
			want := []string{"a href " + tc.wantURL}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if res.Charset != tc.wantCharset {
				t.Errorf("charset = %q, want %q", res.Charset, tc.wantCharset)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"quote closed late", `<a href="/x>text</a><a href=/y">`, []string{"a href http://example.com/x%3Etext%3C/a%3E%3Ca%20href=/y"}},
		{"unclosed quote to EOF: no tag", `<a href="/x>text</a><a href=/y>`, nil},
		{"unterminated tag at EOF", `<a href="/x"`, nil},
		{"duplicate attribute: first wins", `<a href=/first href=/second>`, []string{"a href http://example.com/first"}},
		{"NUL in value", "<a href=/n\x00ul>", []string{"a href http://example.com/n%EF%BF%BDul"}},
		{"NUL in tag name: not <a>", "<a\x00 href=/no>", nil},
		{"unquoted with spaces", `<a href=/one two=/x>`, []string{"a href http://example.com/one"}},
		{"tag soup", `<<a href=/p>><a/href=/q><a href=/r/>`, []string{"a href http://example.com/p", "a href http://example.com/q", "a href http://example.com/r/"}},
		{"duplicates dropped", `<a href=/d><img src=/d><a href="/d#x">`, []string{"a href http://example.com/d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := collect(t, Options{}, tc.doc, "")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	many := strings.Repeat(`<a href="/a">`, 10) + func() string {
		var b strings.Builder
		for i := range 100 {
			b.WriteString(`<a href="/p` + string(rune('a'+i%26)) + strings.Repeat("x", i) + `">`)
		}
		return b.String()
	}()
	got, res := collect(t, Options{MaxLinks: 7}, many, "")
	if len(got) != 7 || res.Truncated != TruncatedLinks || res.Links != 7 {
		t.Errorf("MaxLinks: %d links, %+v", len(got), res)
	}
	got, res = collect(t, Options{KeepDuplicates: true, MaxLinks: 5}, many, "")
	if len(got) != 5 || got[0] != got[4] {
		t.Errorf("KeepDuplicates: %v", got)
	}
	_, res = collect(t, Options{}, many, "")
	if res.Duplicates != 9 || res.Links != 101 || res.Truncated != NotTruncated {
		t.Errorf("dedup: %+v", res)
	}

	long := `<a href="/` + strings.Repeat("x", 100) + `"><a href=/ok>`
	got, res = collect(t, Options{MaxAttrLen: 50}, long, "")
	if len(got) != 1 || res.TooLong != 1 {
		t.Errorf("MaxAttrLen: %v %+v", got, res)
	}

	got, res = collect(t, Options{MaxBytes: 30}, `<a href=/1><a href=/2><a href=/3><a href=/4>`, "")
	if len(got) != 2 || res.Truncated != TruncatedBytes || res.Bytes != 30 {
		t.Errorf("MaxBytes: %v %+v", got, res)
	}
	_, res = collect(t, Options{MaxBytes: 11}, `<a href=/1>`, "")
	if res.Truncated != NotTruncated {
		t.Errorf("exactly MaxBytes is not truncation: %+v", res)
	}

	huge := `<a href=/before><div title="` + strings.Repeat("y", 1<<20) + `"><a href=/after>`
	got, res = collect(t, Options{MaxTokenBytes: 64 << 10}, huge, "")
	if diff := cmp.Diff([]string{"a href http://example.com/before"}, got); diff != "" || res.Truncated != TruncatedToken {
		t.Errorf("MaxTokenBytes: %s %+v", diff, res)
	}
}

func TestErrorsAndOptions(t *testing.T) {
	e, _ := New(Options{})
	if _, err := e.Extract(strings.NewReader(""), nil, "", nil); !errors.Is(err, ErrNilBase) {
		t.Errorf("nil base: %v", err)
	}
	boom := errors.New("boom")
	r := iotest.ErrReader(boom)
	if _, err := e.Extract(r, mustURL(t, docURL), "", nil); !errors.Is(err, boom) {
		t.Errorf("read error at start: %v", err)
	}
	r2 := io.MultiReader(strings.NewReader(`<a href=/x>`+strings.Repeat(" ", 5000)), iotest.ErrReader(boom))
	n := 0
	if _, err := e.Extract(r2, mustURL(t, docURL), "", func(Link) { n++ }); !errors.Is(err, boom) || n != 1 {
		t.Errorf("read error later: %v, %d links", err, n)
	}
	if _, err := New(Options{MaxLinks: -1, MaxBytes: -1}); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "MaxBytes") || !strings.Contains(err.Error(), "MaxLinks") {
		t.Errorf("Validate: %v", err)
	}
	if err := Links(bytes.NewReader([]byte(`<a href=/z>`)), mustURL(t, docURL), "", func(l Link) {
		if l.URL != "http://example.com/z" {
			t.Errorf("Links: %v", l)
		}
	}); err != nil {
		t.Error(err)
	}
}
