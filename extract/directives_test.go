package extract

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

func TestParseDirectives(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Directives
	}{
		{"", 0},
		{"nofollow", NoFollow},
		{"NoFollow", NoFollow},
		{"noindex", NoIndex},
		{"none", NoFollow | NoIndex},
		{"NONE", NoFollow | NoIndex},
		{"noindex, nofollow", NoFollow | NoIndex},
		{" noindex ,follow ", NoIndex},
		{"index,follow", 0},
		{"all", 0},
		{"all, nofollow", NoFollow}, // most restrictive wins
		{"noindex nofollow", NoFollow | NoIndex},
		{"noarchive, nosnippet, max-snippet:20", 0},
		{"no-follow, nofollowx, xnofollow", 0},
		{",,nofollow,,", NoFollow},
		{"\tnoindex\n", NoIndex},
	} {
		if got := ParseDirectives(tc.in); got != tc.want {
			t.Errorf("ParseDirectives(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, d := range []Directives{0, NoFollow, NoIndex, NoFollow | NoIndex} {
		if got := ParseDirectives(d.String()); got != d {
			t.Errorf("ParseDirectives(%q) = %v, want %v", d.String(), got, d)
		}
	}
	if !(NoFollow | NoIndex).Has(NoFollow) || NoIndex.Has(NoFollow) || !Directives(0).Has(0) {
		t.Error("Has")
	}
}

func TestHeaderDirectives(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		token  string
		want   Directives
	}{
		{"none", nil, "sextant", 0},
		{"plain", []string{"noindex"}, "sextant", NoIndex},
		{"list", []string{"noindex, nofollow"}, "sextant", NoIndex | NoFollow},
		{"none directive", []string{"none"}, "sextant", NoIndex | NoFollow},
		{"several headers", []string{"noindex", "nofollow"}, "sextant", NoIndex | NoFollow},
		{"ours", []string{"sextant: nofollow"}, "sextant", NoFollow},
		{"ours, case", []string{"Sextant:NoFollow"}, "sextant", NoFollow},
		{"another bot's", []string{"otherbot: noindex, nofollow"}, "sextant", 0},
		{"another bot's, then ours", []string{"otherbot: noindex, sextant: nofollow"}, "sextant", NoFollow},
		{"ours, then another's", []string{"sextant: nofollow, otherbot: noindex"}, "sextant", NoFollow},
		{"per header scope", []string{"otherbot: noindex", "nofollow"}, "sextant", NoFollow},
		{"all plus another's", []string{"noindex", "otherbot: nofollow"}, "sextant", NoIndex},
		{"custom token", []string{"mybot: none", "sextant: noindex"}, "mybot", NoIndex | NoFollow},
		{"no token", []string{"sextant: nofollow"}, "", 0},
		{"valued directives are not agents", []string{"unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow"}, "sextant", NoFollow},
		{"max-snippet", []string{"max-snippet: 20, noindex"}, "sextant", NoIndex},
		// A malformed agent name: the part is read as everyone's (obeying
		// more, not less).
		{"not a token", []string{"some bot: nofollow"}, "sextant", NoFollow},
		{"index follow", []string{"all", "index, follow"}, "sextant", 0},
	} {
		if got := HeaderDirectives(tc.values, tc.token); got != tc.want {
			t.Errorf("%s: HeaderDirectives(%q, %q) = %v, want %v", tc.name, tc.values, tc.token, got, tc.want)
		}
	}
}

// The page-level directives of robots <meta> elements, on the HTML and the
// XHTML paths alike.
func TestMetaRobots(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		token      string
		want       Directives
	}{
		{"none", `<meta name="description" content="nofollow">`, "sextant", 0},
		{"robots nofollow", `<meta name="robots" content="nofollow">`, "sextant", NoFollow},
		{"robots case", `<META NAME="ROBOTS" CONTENT="NOINDEX">`, "sextant", NoIndex},
		{"content first", `<meta content="none" name="robots">`, "sextant", NoFollow | NoIndex},
		{"name spaces", `<meta name=" robots " content="noindex,nofollow">`, "sextant", NoFollow | NoIndex},
		{"ours", `<meta name="sextant" content="nofollow">`, "sextant", NoFollow},
		{"ours, case", `<meta name="SexTant" content="noindex">`, "sextant", NoIndex},
		{"another bot's", `<meta name="googlebot" content="none">`, "sextant", 0},
		{"custom token", `<meta name="mybot" content="nofollow"><meta name="sextant" content="noindex">`, "mybot", NoFollow},
		{"no token", `<meta name="sextant" content="nofollow">`, "", 0},
		{"combined", `<meta name="robots" content="all"><meta name="sextant" content="noindex"><meta name="robots" content="nofollow">`, "sextant", NoFollow | NoIndex},
		{"first name wins", `<meta name="robots" name="x" content="nofollow">`, "sextant", NoFollow},
		{"no content", `<meta name="robots">`, "sextant", 0},
		{"http-equiv is not robots", `<meta http-equiv="robots" content="nofollow">`, "sextant", 0},
		{"in noscript", `<noscript><meta name="robots" content="nofollow"></noscript>`, "sextant", NoFollow},
	} {
		html := `<html><head>` + tc.head + `</head><body><a href="/a">a</a><meta name="robots" content="index"></body></html>`
		xhtml := `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head>` +
			strings.ReplaceAll(strings.ReplaceAll(tc.head, `">`, `"/>`), "<noscript>", "<div>") +
			`</head><body><a href="/a">a</a></body></html>`
		xhtml = strings.ReplaceAll(xhtml, "</noscript>", "</div>")
		for _, c := range []struct{ doc, ct string }{{html, "text/html"}, {xhtml, xhtmlCT}} {
			got, res := collect(t, Options{RobotsToken: tc.token}, c.doc, c.ct)
			if res.Robots != tc.want {
				t.Errorf("%s (%s): Robots = %v, want %v", tc.name, c.ct, res.Robots, tc.want)
			}
			// Directives never hide links: the caller applies them.
			if !cmp.Equal(got, []string{"a href http://example.com/a"}) {
				t.Errorf("%s (%s): links %q", tc.name, c.ct, got)
			}
		}
	}
}

func TestRelNoFollowAndCanonical(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
		nofollow  int
		canonical string
	}{
		{"nofollow", `<a href="/x" rel="nofollow">x</a><a href="/y">y</a>`, []string{"a href http://example.com/y"}, 1, ""},
		{"rel after href", `<a rel="noopener nofollow" href="/x">`, nil, 1, ""},
		{"rel case, tabs", "<a href=/x rel=\"NoFollow\tnoopener\">", nil, 1, ""},
		{"area", `<map><area href="/x" rel="nofollow"></map>`, nil, 1, ""},
		{"form", `<form action="/s" rel="nofollow"></form>`, nil, 1, ""},
		{"ugc and sponsored are followed", `<a href="/u" rel="ugc">u</a><a href="/s" rel="sponsored">s</a>`, []string{
			"a href http://example.com/u", "a href http://example.com/s"}, 0, ""},
		{"nofollowed, then followed", `<a href="/x" rel="nofollow"><a href="/x">`, []string{"a href http://example.com/x"}, 0, ""},
		{"followed, then nofollowed", `<a href="/x"><a href="/x" rel="nofollow">`, []string{"a href http://example.com/x"}, 0, ""},
		{"nofollowed twice", `<a href="/x" rel="nofollow"><a href="/x" rel="nofollow">`, nil, 1, ""},
		{"nofollow on link is not a link's nofollow", `<link rel="nofollow" href="/l">`, []string{"link href http://example.com/l"}, 0, ""},
		{"img rel ignored", `<img src="/i.png" rel="nofollow">`, []string{"img src http://example.com/i.png"}, 0, ""},
		{"javascript nofollow", `<a href="javascript:x()" rel="nofollow">`, nil, 0, ""},
		{"canonical", `<link rel="canonical" href="/c?b=1#f">`, []string{"link href http://example.com/c?b=1"}, 0, "http://example.com/c?b=1"},
		{"canonical, case, list", `<LINK HREF="http://Other.example:80/c" REL="Alternate CANONICAL">`, []string{"link href http://other.example/c"}, 0, "http://other.example/c"},
		{"first canonical", `<link rel=canonical href=/c1><link rel=canonical href=/c2>`, []string{
			"link href http://example.com/c1", "link href http://example.com/c2"}, 0, "http://example.com/c1"},
		{"canonical after base", `<base href="http://b.example/d/"><link rel="canonical" href="c">`, []string{"link href http://b.example/d/c"}, 0, "http://b.example/d/c"},
		{"canonical self, deduplicated link", `<a href="/c"><link rel="canonical" href="/c">`, []string{"a href http://example.com/c"}, 0, "http://example.com/c"},
		{"canonical on a is not canonical", `<a rel="canonical" href="/c">`, []string{"a href http://example.com/c"}, 0, ""},
		{"canonical without href", `<link rel="canonical"><link rel="canonical" href="/c">`, []string{"link href http://example.com/c"}, 0, "http://example.com/c"},
		{"canonical invalid", `<link rel="canonical" href="http://[bad/"><link rel="canonical" href="data:x">`, nil, 0, ""},
	} {
		xdoc := `<html xmlns="http://www.w3.org/1999/xhtml"><body>` + selfClose(tc.doc) + `</body></html>`
		for _, c := range []struct{ doc, ct string }{{tc.doc, "text/html"}, {xdoc, xhtmlCT}} {
			got, res := collect(t, Options{}, c.doc, c.ct)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (%s): links (-want +got):\n%s", tc.name, c.ct, diff)
			}
			if res.NoFollow != tc.nofollow || res.Canonical != tc.canonical || res.Links != len(got) {
				t.Errorf("%s (%s): NoFollow %d, Canonical %q, Links %d; want %d, %q", tc.name, c.ct, res.NoFollow, res.Canonical, res.Links, tc.nofollow, tc.canonical)
			}
			// FollowNoFollow: every link is emitted, none counted.
			all, res := collect(t, Options{FollowNoFollow: true}, c.doc, c.ct)
			if res.NoFollow != 0 || len(all) != len(got)+tc.nofollow {
				t.Errorf("%s (%s): FollowNoFollow: %q, NoFollow %d", tc.name, c.ct, all, res.NoFollow)
			}
		}
	}
	// With KeepDuplicates every nofollow occurrence counts.
	_, res := collect(t, Options{KeepDuplicates: true}, `<a href="/x" rel="nofollow"><a href="/x" rel="nofollow"><a href="/x">`, "text/html")
	if res.NoFollow != 2 || res.Links != 1 {
		t.Errorf("KeepDuplicates: %+v", res)
	}
}

// selfClose makes the void elements of an HTML snippet well-formed XML.
func selfClose(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '>')
		tag := s[i : i+j+1]
		name := strings.ToLower(strings.FieldsFunc(tag[1:], func(r rune) bool { return r == ' ' || r == '>' || r == '\t' })[0])
		b.WriteString(s[:i])
		void := name == "link" || name == "img" || name == "area" || name == "base" ||
			(name == "a" || name == "form") && !strings.Contains(s, "</"+name)
		if void && !strings.HasSuffix(tag, "/>") {
			tag = tag[:len(tag)-1] + "/>"
		}
		// XML attribute values must be quoted.
		tag = quoteAttrs(tag)
		b.WriteString(tag)
		s = s[i+j+1:]
	}
}

func quoteAttrs(tag string) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(tag); i++ {
		b.WriteByte(tag[i])
		switch {
		case quote != 0:
			if tag[i] == quote {
				quote = 0
			}
			continue
		case tag[i] == '"' || tag[i] == '\'':
			quote = tag[i]
			continue
		}
		if tag[i] == '=' && i+1 < len(tag) && tag[i+1] != '"' && tag[i+1] != '\'' {
			j := i + 1
			for j < len(tag) && tag[j] != ' ' && tag[j] != '>' && !(tag[j] == '/' && j+1 < len(tag) && tag[j+1] == '>') {
				j++
			}
			b.WriteString(`"` + tag[i+1:j] + `"`)
			i = j - 1
		}
	}
	return b.String()
}

func TestHeaderCanonical(t *testing.T) {
	base := mustURL(t, "http://Example.com/dir/doc.pdf")
	for _, tc := range []struct {
		name   string
		values []string
		want   string
	}{
		{"none", nil, ""},
		{"plain", []string{`<http://example.com/c>; rel="canonical"`}, "http://example.com/c"},
		{"relative", []string{`</c/d.pdf>; rel=canonical`}, "http://example.com/c/d.pdf"},
		{"case and list", []string{`<c>; REL="Alternate Canonical"`}, "http://example.com/dir/c"},
		{"second link-value", []string{`<p.html>; rel="prev", <c>; rel="canonical"; type="text/html"`}, "http://example.com/dir/c"},
		{"second header", []string{`<p.html>; rel=prev`, `<c2>; rel=canonical`}, "http://example.com/dir/c2"},
		{"comma in the URI", []string{`<a,b>; rel="next", <c,d>; rel=canonical`}, "http://example.com/dir/c,d"},
		{"quoted comma and semicolon", []string{`<x>; title="a, b; rel=canonical"; rel=next, <y>; rel="canonical"`}, "http://example.com/dir/y"},
		{"escaped quote", []string{`<x>; title="a \"q\", rel=canonical"; rel=next, <y>; rel=canonical`}, "http://example.com/dir/y"},
		{"first rel only", []string{`<x>; rel=next; rel=canonical`}, ""},
		{"anchor is another resource's", []string{`<x>; rel=canonical; anchor="#s"`, `<y>; rel=canonical`}, "http://example.com/dir/y"},
		{"spaces", []string{`  < /c >  ;  rel = "canonical" `}, "http://example.com/c"},
		{"malformed", []string{`http://example.com/c; rel=canonical`}, ""},
		{"malformed rest", []string{`<c>; rel=canonical garbage`}, ""},
		{"unterminated", []string{`<c>; rel="canonical`}, ""},
		{"javascript", []string{`<javascript:x()>; rel=canonical`}, ""},
		{"invalid", []string{`<http://[bad/>; rel=canonical`}, ""},
		{"too long", []string{"<" + strings.Repeat("a", maxHeaderCanonical+1) + ">; rel=canonical"}, ""},
	} {
		if got := HeaderCanonical(tc.values, base); got != tc.want {
			t.Errorf("%s: HeaderCanonical(%q) = %q, want %q", tc.name, tc.values, got, tc.want)
		}
	}
	if HeaderCanonical([]string{`<c>; rel=canonical`}, nil) != "" {
		t.Error("nil base")
	}
}

func TestRobotsTokenValidated(t *testing.T) {
	if _, err := New(Options{RobotsToken: "my bot"}); err == nil {
		t.Error("RobotsToken with a space accepted")
	}
	if _, err := New(Options{RobotsToken: "My-Bot_2"}); err != nil {
		t.Error(err)
	}
}

func FuzzHeaderDirectives(f *testing.F) {
	for _, s := range []string{"noindex, nofollow", "otherbot: none, sextant: nofollow", "unavailable_after: 25 Jun 2010 15:00:00 PST",
		"sextant:", ":", ",,", "none"} {
		f.Add(s, "sextant")
	}
	f.Fuzz(func(t *testing.T, v, token string) {
		d := HeaderDirectives([]string{v}, token)
		if d&^(NoFollow|NoIndex) != 0 {
			t.Fatalf("%q: unknown bits %b", v, d)
		}
		// A directive for everyone, prefixed, still holds; one for
		// another agent adds nothing.
		if HeaderDirectives([]string{v, "nofollow"}, token)&NoFollow == 0 {
			t.Fatalf("%q: nofollow lost", v)
		}
		if got := HeaderDirectives([]string{"zz-other-bot: none, " + v}, token); got != 0 && !strings.Contains(v, ":") && !strings.EqualFold(token, "zz-other-bot") {
			t.Fatalf("%q: another agent's part gave %v", v, got)
		}
		if d != 0 && !strings.Contains(strings.ToLower(v), "no") {
			t.Fatalf("%q: %v from no directive word", v, d)
		}
	})
}

func FuzzHeaderCanonical(f *testing.F) {
	for _, s := range []string{`<http://example.com/c>; rel="canonical"`, `<a,b>; rel=next, <c>; rel=canonical`,
		`<x>; title="a \"q\", rel=canonical"; rel=next, <y>; rel=canonical`, `<`, `<>;rel=canonical`, `<x>;;`} {
		f.Add(s)
	}
	base, err := urlnorm.Parse("http://fuzz.example/dir/doc")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := HeaderCanonical([]string{v}, base)
		if got == "" {
			return
		}
		if c, err := urlnorm.Normalize(got); err != nil || c != got {
			t.Fatalf("%q: non-canonical %q", v, got)
		}
		if !bytes.Contains(bytes.ToLower([]byte(v)), []byte("canonical")) {
			t.Fatalf("%q: canonical %q without a canonical relation", v, got)
		}
	})
}
