package simweb

import (
	"strconv"
	"strings"
)

// pageKind says what a URL of the web is.
type pageKind uint8

const (
	pkNone      pageKind = iota // not a page: 404
	pkHome                      // /
	pkDir                       // /d{a}/
	pkArticle                   // /d{a%D}/p{a}.html (article a ≥ 1; dead if a ≥ n)
	pkPrint                     // article + ?view=print
	pkImg                       // /img/{a}.png
	pkDoc                       // /doc/{a}.pdf
	pkCSS                       // /css/{a}.css
	pkJS                        // /js/{a}.js
	pkMedia                     // /media/{a}.mp4
	pkOrphan                    // /orphan/{a}.html: only linked from places a crawler must not look
	pkRobots                    // /robots.txt
	pkRobotsHop                 // /robots/{a}.txt (RobotsRedirect hosts)
	pkPrivate                   // /private/{a}.html (RobotsDisallow hosts)
	pkChain                     // /r/{a}/{b}: redirect chain a, b hops left
	pkLoop                      // /loop/{a}/{a|b}
	pkCross                     // /x/{a}: redirect to another host
	pkError                     // /e/{b}/{a}.html: status b
	pkStall                     // /stall/{a}.html
	pkHuge                      // /huge/{a}.html
	pkBomb                      // /bomb/{a}.html
	pkType                      // /t/{a}.html: Content-Type variant a
	pkCal                       // /cal/YYYY-MM/ (a = months since 2026-01), trap hosts
	pkSess                      // /sess/{a}?sid=… (b = session number), trap hosts
	pkDeep                      // /deep/ + "a/"×b, trap hosts
	pkExternal                  // externals[a]: not a page of the web
	// Sitemap hosts only (sitemaps.go); after pkExternal so that the kinds
	// above keep the values the generator's seeds use.
	pkSitemap       // /sitemap.xml
	pkSitemapTxt    // /sitemap-pages.txt
	pkSitemapIndex  // /sitemap_index.xml
	pkSitemapGz     // /sitemap-{a}.xml.gz
	pkSitemapNested // /sitemap-nested.xml: an index listed by an index
	pkSitemapDeep   // /sitemap-deep.txt: listed only by the nested index
	pkOnly          // /only/{a}.html: listed by sitemaps, linked from no page
)

// externals are links out of the web (or to nowhere in it): a crawler
// must not fetch them. canon is the WHATWG serialisation without fragment.
var externals = [...]struct{ raw, canon string }{
	{"https://www.example.com/", "https://www.example.com/"},
	{"HTTP://Example.ORG:80/a/./b?x=1#y", "http://example.org/a/b?x=1"},
	{"mailto:webmaster@sim.test", "mailto:webmaster@sim.test"},
	{"javascript:void(0)", "javascript:void(0)"},
	{"ftp://ftp.sim.test/pub/", "ftp://ftp.sim.test/pub/"},
	{"http://nohost.sim.test/x", "http://nohost.sim.test/x"},
	{"http://example.com:8080/", "http://example.com:8080/"},
}

// target is one URL of the web in structured form.
type target struct {
	host int32
	kind pageKind
	http bool // spelled http:// on a host whose canonical scheme is https (tls.go)
	a, b int64
}

// Per-host counts derived from the number of articles n.
func dirsOf(n int32) int64    { return int64(min(16, 1+n/25)) }
func imgsOf(n int32) int64    { return int64(2 + n/4) }
func docsOf(n int32) int64    { return int64(1 + n/20) }
func chainHops(k int64) int64 { return [...]int64{1, 2, 4, 6}[k] }

const (
	numCSS, numJS, numMedia, numOrphans, numPrivate = 2, 2, 1, 4, 2
	numChains, numLoops, numCross, numErrorsPer     = 4, 2, 2, 2
	numStall, numHuge, numBomb, numTypes            = 2, 3, 2, 6
)

var errorCodes = [...]int64{404, 410, 500, 503}

// fancy reports whether article a of host h has a name with a space and a
// non-ASCII letter (canonically percent-encoded).
func (w *Web) fancy(h int32, a int64) bool {
	return hash3(w.cfg.Seed^0xfa9c, uint64(h), uint64(a))%16 == 0
}

const fancySuffix = "%20caf%C3%A9.html"

// appendPath appends the canonical path and query of t.
func (w *Web) appendPath(b []byte, t target) []byte {
	n := w.hosts[t.host].n
	num := func(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }
	switch t.kind {
	case pkHome:
		return append(b, '/')
	case pkDir:
		b = append(b, "/d"...)
		return append(num(b, t.a), '/')
	case pkArticle, pkPrint:
		b = append(b, "/d"...)
		b = num(b, t.a%dirsOf(n))
		b = append(b, "/p"...)
		b = num(b, t.a)
		if w.fancy(t.host, t.a) {
			b = append(b, fancySuffix...)
		} else {
			b = append(b, ".html"...)
		}
		if t.kind == pkPrint {
			b = append(b, "?view=print"...)
		}
		return b
	case pkImg:
		return append(num(append(b, "/img/"...), t.a), ".png"...)
	case pkDoc:
		return append(num(append(b, "/doc/"...), t.a), ".pdf"...)
	case pkCSS:
		return append(num(append(b, "/css/"...), t.a), ".css"...)
	case pkJS:
		return append(num(append(b, "/js/"...), t.a), ".js"...)
	case pkMedia:
		return append(num(append(b, "/media/"...), t.a), ".mp4"...)
	case pkOrphan:
		return append(num(append(b, "/orphan/"...), t.a), ".html"...)
	case pkRobots:
		return append(b, "/robots.txt"...)
	case pkRobotsHop:
		return append(num(append(b, "/robots/"...), t.a), ".txt"...)
	case pkPrivate:
		return append(num(append(b, "/private/"...), t.a), ".html"...)
	case pkChain:
		b = append(num(append(b, "/r/"...), t.a), '/')
		return num(b, t.b)
	case pkLoop:
		b = append(num(append(b, "/loop/"...), t.a), '/')
		return append(b, byte('a'+t.b))
	case pkCross:
		return num(append(b, "/x/"...), t.a)
	case pkError:
		b = append(num(append(b, "/e/"...), t.b), '/')
		return append(num(b, t.a), ".html"...)
	case pkStall:
		return append(num(append(b, "/stall/"...), t.a), ".html"...)
	case pkHuge:
		return append(num(append(b, "/huge/"...), t.a), ".html"...)
	case pkBomb:
		return append(num(append(b, "/bomb/"...), t.a), ".html"...)
	case pkType:
		return append(num(append(b, "/t/"...), t.a), ".html"...)
	case pkCal:
		y, m := 2026+t.a/12, 1+t.a%12
		b = num(append(b, "/cal/"...), y)
		b = append(b, '-', byte('0'+m/10), byte('0'+m%10), '/')
		return b
	case pkSess:
		b = num(append(b, "/sess/"...), t.a)
		b = append(b, "?sid="...)
		return w.appendSid(b, t)
	case pkDeep:
		b = append(b, "/deep/"...)
		for i := int64(0); i < t.b; i++ {
			b = append(b, "a/"...)
		}
		return b
	case pkSitemap, pkSitemapTxt, pkSitemapIndex, pkSitemapGz, pkSitemapNested, pkSitemapDeep, pkOnly:
		return sitemapPath(b, t)
	}
	return append(b, "/404"...)
}

func (w *Web) appendSid(b []byte, t target) []byte {
	check := uint32(hash3(w.cfg.Seed^0x5e55, uint64(t.host), uint64(t.a)<<32|uint64(t.b)))
	return appendHex(appendHex(b, uint32(t.b)), check)
}

func appendHex(b []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for s := 28; s >= 0; s -= 4 {
		b = append(b, digits[v>>uint(s)&15])
	}
	return b
}

// parseNum parses a canonical decimal number (no sign, no leading zeros)
// at the start of s.
func parseNum(s string) (v int64, rest string, ok bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' && i < 12 {
		v = v*10 + int64(s[i]-'0')
		i++
	}
	if i == 0 || (i > 1 && s[0] == '0') {
		return 0, s, false
	}
	return v, s[i:], true
}

// numThen parses "<num><suffix>" exactly.
func numThen(s, suffix string) (int64, bool) {
	v, rest, ok := parseNum(s)
	return v, ok && rest == suffix
}

// parse maps the path and query of a request on host h to the page it
// names, or pkNone. Only canonical spellings are pages.
func (w *Web) parse(h int32, pq string) target {
	t := target{host: h}
	hi := w.hosts[h]
	path, query, hasQ := strings.Cut(pq, "?")
	if hi.kind == Trap {
		return w.parseTrap(t, path, query, hasQ)
	}
	if pq == "/" {
		t.kind = pkHome
		return t
	}
	if pq == "/robots.txt" {
		t.kind = pkRobots
		return t
	}
	if hi.sm != smNone && !hasQ {
		if st, ok := w.parseSitemap(t, hi, path); ok {
			return st
		}
	}
	if hasQ && !(query == "view=print" && strings.HasPrefix(path, "/d")) {
		return t
	}
	seg, rest, _ := strings.Cut(path[min(1, len(path)):], "/")
	var ok bool
	var v int64
	switch {
	case len(seg) > 1 && seg[0] == 'd' && seg[1] >= '0' && seg[1] <= '9':
		j, ok := numThen(seg[1:], "")
		if !ok || j >= dirsOf(hi.n) {
			return t
		}
		if rest == "" && !hasQ {
			t.kind, t.a = pkDir, j
			return t
		}
		if !strings.HasPrefix(rest, "p") {
			return t
		}
		a, tail, ok := parseNum(rest[1:])
		if !ok || a < 1 || a >= int64(hi.n) || a%dirsOf(hi.n) != j {
			return t
		}
		want := ".html"
		if w.fancy(h, a) {
			want = fancySuffix
		}
		if tail != want {
			return t
		}
		t.kind, t.a = pkArticle, a
		if hasQ {
			t.kind = pkPrint
		}
		return t
	case seg == "img":
		v, ok = numThen(rest, ".png")
		return bounded(t, pkImg, v, ok && v < imgsOf(hi.n))
	case seg == "doc":
		v, ok = numThen(rest, ".pdf")
		return bounded(t, pkDoc, v, ok && v < docsOf(hi.n))
	case seg == "css":
		v, ok = numThen(rest, ".css")
		return bounded(t, pkCSS, v, ok && v < numCSS)
	case seg == "js":
		v, ok = numThen(rest, ".js")
		return bounded(t, pkJS, v, ok && v < numJS)
	case seg == "media":
		v, ok = numThen(rest, ".mp4")
		return bounded(t, pkMedia, v, ok && v < numMedia)
	case seg == "orphan":
		v, ok = numThen(rest, ".html")
		return bounded(t, pkOrphan, v, ok && v < numOrphans)
	}
	return w.parseSpecial(t, hi, seg, rest)
}

func bounded(t target, k pageKind, a int64, ok bool) target {
	if ok {
		t.kind, t.a = k, a
	}
	return t
}

func (w *Web) parseSpecial(t target, hi hostInfo, seg, rest string) target {
	var v int64
	var ok bool
	switch {
	case seg == "robots" && hi.kind == RobotsRedirect:
		v, ok = numThen(rest, ".txt")
		return bounded(t, pkRobotsHop, v, ok && v < w.robotsHops(hi))
	case seg == "private" && hi.kind == RobotsDisallow:
		v, ok = numThen(rest, ".html")
		return bounded(t, pkPrivate, v, ok && v < numPrivate)
	case seg == "r" && hi.kind == Redirects:
		k, tail, ok := parseNum(rest)
		if !ok || k >= numChains || len(tail) < 2 || tail[0] != '/' {
			return t
		}
		m, ok := numThen(tail[1:], "")
		if ok && m <= chainHops(k) {
			t.kind, t.a, t.b = pkChain, k, m
		}
		return t
	case seg == "loop" && hi.kind == Redirects:
		k, tail, ok := parseNum(rest)
		if ok && k < numLoops && (tail == "/a" || tail == "/b") {
			t.kind, t.a, t.b = pkLoop, k, int64(tail[1]-'a')
		}
		return t
	case seg == "x" && hi.kind == Redirects:
		v, ok = numThen(rest, "")
		return bounded(t, pkCross, v, ok && v < numCross)
	case seg == "e" && hi.kind == Errors:
		code, tail, ok := parseNum(rest)
		if !ok || len(tail) < 2 || tail[0] != '/' {
			return t
		}
		k, ok := numThen(tail[1:], ".html")
		for _, c := range errorCodes {
			if ok && c == code && k < numErrorsPer {
				t.kind, t.a, t.b = pkError, k, code
			}
		}
		return t
	case seg == "stall" && hi.kind == Stall:
		v, ok = numThen(rest, ".html")
		return bounded(t, pkStall, v, ok && v < numStall)
	case seg == "huge" && hi.kind == Huge:
		v, ok = numThen(rest, ".html")
		return bounded(t, pkHuge, v, ok && v < numHuge)
	case seg == "bomb" && hi.kind == GzipBomb:
		v, ok = numThen(rest, ".html")
		return bounded(t, pkBomb, v, ok && v < numBomb)
	case seg == "t" && hi.kind == WrongType:
		v, ok = numThen(rest, ".html")
		return bounded(t, pkType, v, ok && v < numTypes)
	}
	return t
}

func (w *Web) parseTrap(t target, path, query string, hasQ bool) target {
	switch {
	case path == "/" && !hasQ:
		t.kind = pkHome
	case path == "/robots.txt" && !hasQ:
		t.kind = pkRobots
	case strings.HasPrefix(path, "/cal/") && !hasQ:
		s := path[5:]
		y, rest, ok := parseNum(s)
		if !ok || y < 2026 || len(rest) != 4 || rest[0] != '-' || rest[3] != '/' {
			return t
		}
		m := int64(rest[1]-'0')*10 + int64(rest[2]-'0')
		if rest[1] < '0' || rest[1] > '1' || rest[2] < '0' || rest[2] > '9' || m < 1 || m > 12 {
			return t
		}
		t.kind, t.a = pkCal, (y-2026)*12+m-1
	case strings.HasPrefix(path, "/sess/") && strings.HasPrefix(query, "sid=") && len(query) == 20:
		n, ok := numThen(path[6:], "")
		if !ok {
			return t
		}
		sid, err := strconv.ParseUint(query[4:12], 16, 32)
		if err != nil {
			return t
		}
		c := target{host: t.host, kind: pkSess, a: n, b: int64(sid)}
		if string(w.appendSid(nil, c)) == query[4:] {
			return c
		}
	case strings.HasPrefix(path, "/deep/") && !hasQ:
		s := path[6:]
		d := int64(0)
		for ; strings.HasPrefix(s, "a/"); s = s[2:] {
			d++
		}
		if s == "" {
			t.kind, t.b = pkDeep, d
		}
	}
	return t
}

// robotsHops is the number of redirects before a RobotsRedirect host's
// robots.txt: 2 for the first such host, 7 (too many: treated as 404) for
// the second, then 1–7 by hash.
func (w *Web) robotsHops(hi hostInfo) int64 {
	switch hi.ord {
	case 0:
		return 2
	case 1:
		return 7
	}
	return 1 + int64(hash3(w.cfg.Seed, uint64(hi.ord), 0x40b5)%7)
}
