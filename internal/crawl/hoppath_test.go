package crawl

import (
	"strconv"
	"strings"
	"testing"
)

func TestExtendHops(t *testing.T) {
	for _, tc := range []struct {
		in   string
		hop  byte
		want string
	}{
		{"", HopLink, "L"},
		{"L", HopRedirect, "LR"},
		{"LR", HopPrereq, "LRP"},
		{strings.Repeat("L", 49), HopEmbed, strings.Repeat("L", 49) + "E"},
		{strings.Repeat("L", 49) + "E", HopSitemap, "1+" + strings.Repeat("L", 48) + "ES"},
		{"1+" + strings.Repeat("L", 48) + "ES", HopLink, "2+" + strings.Repeat("L", 47) + "ESL"},
		{"99+" + strings.Repeat("R", 50), HopLink, "100+" + strings.Repeat("R", 49) + "L"},
	} {
		got := extendHops(tc.in, tc.hop)
		if got != tc.want {
			t.Errorf("extendHops(%q, %c) = %q, want %q", tc.in, tc.hop, got, tc.want)
		}
		if !validHops(got) || HopCount(got) != HopCount(tc.in)+1 {
			t.Errorf("extendHops(%q) = %q: valid %v, count %d", tc.in, got, validHops(got), HopCount(got))
		}
	}
	for _, bad := range []string{"l", "L+L", "0+" + strings.Repeat("L", 50), "1+L", "+" + strings.Repeat("L", 50),
		strings.Repeat("L", 51), "01+" + strings.Repeat("L", 50), "L#", "1234567890+" + strings.Repeat("L", 50)} {
		if validHops(bad) || HopCount(bad) != -1 {
			t.Errorf("validHops(%q) = true", bad)
		}
	}
}

func TestHopsDepth(t *testing.T) {
	for p, want := range map[string]uint16{"": 0, "L": 1, "LR": 2, "PS": 1, "LPSS": 3, "LPSSS": 4, "bad": 0,
		"7+" + strings.Repeat("L", 50): 57, "2+P" + strings.Repeat("S", 49): 51} {
		if got := hopsDepth(p); got != want {
			t.Errorf("hopsDepth(%q) = %d, want %d", p, got, want)
		}
	}
}

func TestLinkHop(t *testing.T) {
	for _, tc := range []struct {
		tag, attr string
		want      byte
	}{
		{"a", "href", HopLink}, {"area", "href", HopLink}, {"img", "src", HopEmbed}, {"img", "srcset", HopEmbed},
		{"script", "src", HopEmbed}, {"link", "href", HopEmbed}, {"iframe", "src", HopEmbed},
		{"meta", "content", HopRedirect}, {"div", "data-x", HopLink}, {"body", "background", HopEmbed},
	} {
		if got := linkHop(tc.tag, tc.attr); got != tc.want {
			t.Errorf("linkHop(%s, %s) = %c, want %c", tc.tag, tc.attr, got, tc.want)
		}
	}
}

func TestAnnotRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		url  string
		a    annot
		want string
	}{
		{"http://a.test/x", annot{}, "http://a.test/x"},
		{"http://a.test/x", annot{hops: "LL", via: "http://a.test/p?q=1"}, "http://a.test/x#h=LL#v=14.p?q=1"},
		{"http://a.test/blog/2024/post", annot{hops: "LL", via: "http://a.test/blog/2024/index.html"}, "http://a.test/blog/2024/post#h=LL#v=24.index.html"},
		{"http://a.test/x", annot{hops: "L", via: "https://a.test/p"}, "http://a.test/x#h=L#v=https://a.test/p"},
		{"http://a.test:81/x", annot{hops: "L", via: "http://a.test/"}, "http://a.test:81/x#h=L#v=http://a.test/"},
		{"http://a.test/sitemap.xml", annot{sm: smRoot, hops: "PS", via: "http://a.test/robots.txt"},
			"http://a.test/sitemap.xml#sextant-sitemap#h=PS#v=14.robots.txt"},
		{"http://a.test/s2.xml", annot{sm: smChild, hops: "PSS", via: "http://b.test/s.xml"},
			"http://a.test/s2.xml#sextant-sitemap-child#h=PSS#v=http://b.test/s.xml"},
		{"http://a.test/x", annot{hops: "L", via: "http://a.test/" + strings.Repeat("v", maxAnnotated)}, "http://a.test/x#h=L"},
	} {
		got := withAnnot(tc.url, tc.a)
		if got != tc.want {
			t.Errorf("withAnnot(%q, %+v) = %q, want %q", tc.url, tc.a, got, tc.want)
		}
		bare, a := splitAnnot(got)
		want := tc.a
		if !strings.Contains(tc.want, annotVia) {
			want.via = "" // dropped: too long
		}
		if bare != tc.url || a != want {
			t.Errorf("splitAnnot(%q) = %q, %+v; want %q, %+v", got, bare, a, tc.url, want)
		}
		if urlFP(got) != urlFP(tc.url) {
			t.Errorf("urlFP(%q) differs from the bare URL's", got)
		}
	}
	// Queued before annotations, or by a later version: still parse.
	for s, want := range map[string]annot{
		"http://a.test/x#sextant-sitemap":  {sm: smRoot},
		"http://a.test/x#h=L#v=14.p#z=new": {hops: "L", via: "http://a.test/p"},
		"http://a.test/x#h=bad#v=14.p":     {via: "http://a.test/p"},
		"http://a.test/x#h=L#v=99.p":       {hops: "L"}, // not a compact via of this URL: none
	} {
		if bare, a := splitAnnot(s); bare != "http://a.test/x" || a != want {
			t.Errorf("splitAnnot(%q) = %q, %+v; want %+v", s, bare, a, want)
		}
	}
}

// FuzzHopPath: a valid hop path extends to a valid one a hop longer, never
// longer than MaxHopsShown letters; an annotated URL splits back.
func FuzzHopPath(f *testing.F) {
	f.Add("", byte('L'), "http://a.test/x", "http://a.test/p")
	f.Add("3+"+strings.Repeat("E", 50), byte('R'), "https://b.test:8443/", "http://c.test/?a#")
	f.Add("LLR#", byte('#'), "http://a.test/x#y", "/rel")
	f.Add("", byte('E'), "http://a.test/dir/x", "http://a.test/dir/")
	f.Add("", byte('E'), "http://a.test/dir/x", "7abc")
	f.Fuzz(func(t *testing.T, p string, hop byte, u, via string) {
		if validHops(p) {
			n := HopCount(p)
			hop = 'A' + hop%26
			q := extendHops(p, hop)
			if !validHops(q) || HopCount(q) != n+1 || !strings.HasSuffix(q, string(hop)) {
				t.Fatalf("extendHops(%q, %c) = %q", p, hop, q)
			}
		}
		bare, a := splitAnnot(u)
		if strings.Contains(bare, "#") || (a.hops != "" && !validHops(a.hops)) {
			t.Fatalf("splitAnnot(%q) = %q, %+v", u, bare, a)
		}
		if strings.Contains(via, "#") || strings.Contains(bare, "://") == false {
			return
		}
		a.via = via
		if !strings.Contains(via, "://") || via[0] >= '0' && via[0] <= '9' {
			a.via = "" // not an absolute via: not what a worker stores
		}
		s := withAnnot(bare, a)
		b2, a2 := splitAnnot(s)
		if a2.via == "" && len(s) <= maxAnnotated-len(annotVia)-len(via) {
			a2.via = a.via // dropped only when too long
		}
		if b2 != bare || a2 != a {
			t.Fatalf("withAnnot(%q, %+v) = %q splits to %q, %+v", bare, a, s, b2, a2)
		}
	})
}

// FuzzParseLogLine: a line that parses is written back by CrawlLog.Write to
// a line that parses to the same entry (the keyed provenance fields
// included), and a written line never holds a control byte.
func FuzzParseLogLine(f *testing.F) {
	const old = "2026-11-22T03:04:05.000Z n1 200 0 0 0 ok http://a.sim.test/p text/html -"
	for _, s := range []string{old, old + " 4", old + " robots=noindex canonical=http://a/c",
		old + " via=http://a.sim.test/ hops=LLE digest=sha1:ABC proto=HTTP/1.1 warc=f.warc.gz:0",
		old + " 9 hops=3+" + strings.Repeat("L", 50) + " warc=a:b:17", old + " warc=x:+1", old + " warc=:1",
		old + " hops=LL via=http://x/", old + " proto= ", old + " digest=a warc=f:007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		e, err := ParseLogLine(line)
		if err != nil {
			return
		}
		if e.WARCOffset < 0 || (e.WARCFile == "" && e.WARCOffset != 0) {
			t.Fatalf("%q: warc %q %d", line, e.WARCFile, e.WARCOffset)
		}
		var buf strings.Builder
		l := NewCrawlLog(&buf)
		l.SetMaxURLLength(MaxLogURLLength)
		if err := l.Write(e); err != nil {
			t.Fatal(err)
		}
		// Write escapes what a lenient parse let through (control bytes)
		// and cuts long fields: after one write the line is a fixed point.
		line1 := buf.String()
		e2, err := ParseLogLine(line1)
		if err != nil {
			t.Fatalf("%q written as %q, which does not parse: %v", line, line1, err)
		}
		buf.Reset()
		if err := l.Write(e2); err != nil {
			t.Fatal(err)
		}
		if buf.String() != line1 {
			t.Fatalf("%q written as %q, then as %q", line, line1, buf.String())
		}
		if e2.WARCOffset != e.WARCOffset || (e2.WARCFile != e.WARCFile && len(e.WARCFile) <= LogContentTypeLength && !hasCtl(e.WARCFile)) ||
			(e2.Hops != e.Hops && !hasCtl(e.Hops)) {
			t.Fatalf("%q: %+v written and read back as %+v", line, e, e2)
		}
	})
}

func hasCtl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// TestAnnotate: a page's links are annotated as withAnnot would, whatever
// their hop kinds and however the worker's hop memo turns over, and each
// costs one allocation (the result): it used to cost four.
func TestAnnotate(t *testing.T) {
	w := &worker{}
	for _, page := range []struct{ url, hops string }{
		{"http://a.test/dir/index.html", "LL"},
		{"http://a.test/dir/index.html", "LLE"}, // same page reached another way
		{"http://b.test/", ""},
	} {
		w.cur, w.ca = page.url, annot{hops: page.hops}
		w.kinds = []byte{HopLink, HopEmbed, HopRedirect, HopSitemap, HopPrereq, HopLink, HopEmbed}
		for i := range len(w.kinds) + 1 {
			hop := byte(HopLink)
			if i < len(w.kinds) {
				hop = w.kinds[i]
			}
			link := "http://a.test/dir/x" + strconv.Itoa(i)
			want := withAnnot(link, annot{hops: extendHops(page.hops, hop), via: page.url})
			if got := w.annotate(link, i); got != want {
				t.Errorf("page %s (hops %q): annotate(%q, %d) = %q, want %q", page.url, page.hops, link, i, got, want)
			}
		}
	}
	w.cur, w.ca = "http://a.test/dir/index.html", annot{hops: "LL"}
	if n := testing.AllocsPerRun(100, func() { _ = w.annotate("http://a.test/dir/x", 0) }); n > 1 {
		t.Errorf("annotate: %.0f allocations per link, want 1", n)
	}
}
