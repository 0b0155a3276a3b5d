package simweb

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"time"
)

// Link is one URL reference written into a generated body.
type Link struct {
	// Tag names the element (and attribute where it matters): "a", "area",
	// "link", "img", "srcset", "script", "iframe", "frame", "embed", "video",
	// "source", "form", "meta-refresh".
	Tag string
	Raw string // the attribute value exactly as written (no entities are used)
	URL string // the canonical URL it resolves to (WHATWG, fragment removed)
	End int    // body offset just past the element's start tag
}

type tailKind uint8

const (
	tailNone   tailKind = iota
	tailFiller          // tailLen more bytes of filler text, then </body></html>
	tailBomb            // tailLen more bytes of repeated gzip members of zeros
)

// gen builds one response. It is pooled; nothing in it survives a request.
type gen struct {
	w       *Web
	buf     []byte
	tmp     []byte
	collect bool
	links   []Link
	nlinks  int
	targets []target
	seen    map[target]struct{}
	r       rng

	self     target
	hi       hostInfo
	baseT    target // what relative links are relative to (self or <base href>)
	basePath []byte // canonical path of baseT without query
	hasBase  bool
	baseRaw  string

	zipfCache [4]zipfDist // recently used popularity distributions
	zipfNext  int

	asciiOnly, malformed, linksFirst bool
	limit                            int

	status     int
	ctype      string // "" with noCT: no Content-Type header at all
	noCT       bool
	location   string
	encoding   string
	retryAfter bool
	tail       tailKind
	tailLen    int64
	stall      time.Duration
	latency    time.Duration
}

var genPool = sync.Pool{New: func() any {
	return &gen{buf: make([]byte, 0, 64<<10), seen: make(map[target]struct{}, 128)}
}}

func (w *Web) getGen(collect bool) *gen {
	g := genPool.Get().(*gen)
	*g = gen{w: w, buf: g.buf[:0], tmp: g.tmp[:0], links: g.links[:0], targets: g.targets[:0],
		seen: g.seen, basePath: g.basePath[:0], collect: collect, zipfCache: g.zipfCache, zipfNext: g.zipfNext}
	clear(g.seen)
	return g
}

func putGen(g *gen) {
	if cap(g.buf) > 4<<20 {
		g.buf = nil
	}
	for i := range g.links {
		g.links[i] = Link{}
	}
	g.w = nil
	genPool.Put(g)
}

func (g *gen) str(s string) { g.buf = append(g.buf, s...) }

// appendHost appends the canonical name of host h.
func (w *Web) appendHost(b []byte, h int32) []byte {
	b = append(b, 'h')
	v := int64(h)
	var d [20]byte
	i := len(d)
	for v > 0 || i > len(d)-5 {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
	}
	b = append(b, d[i:]...)
	b = append(b, '.')
	return append(b, w.cfg.Domain...)
}

// URL returns the canonical URL of t.
func (w *Web) url(t target) string {
	if t.kind == pkExternal {
		return externals[t.a].canon
	}
	b := w.appendHost(append(make([]byte, 0, 64), w.canonScheme(t)...), t.host)
	return string(w.appendPath(b, t))
}

// setBase makes relative links relative to t (the page itself or <base href>).
func (g *gen) setBase(t target) {
	g.baseT = t
	p := g.w.appendPath(g.basePath[:0], t)
	if i := bytes.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	g.basePath = p
}

// appendRaw appends some spelling of t that resolves (WHATWG, against the
// current base) to t's canonical URL.
func (g *gen) appendRaw(b []byte, t target, fancyOK bool) []byte {
	r := &g.r
	if t.kind == pkExternal {
		return append(b, externals[t.a].raw...)
	}
	if !g.hasBase && t == g.self && r.chance(0.5) {
		b = append(b, "#sec"...)
		return append(b, byte('0'+r.intn(10)))
	}
	if !g.hasBase && t.kind == pkPrint && g.self.kind == pkArticle && t.a == g.self.a &&
		t.host == g.self.host && !t.http && r.chance(0.5) {
		return append(b, "?view=print"...)
	}
	g.tmp = g.w.appendPath(g.tmp[:0], t)
	path := g.tmp
	if fancyOK && !g.asciiOnly && r.chance(0.5) {
		if i := bytes.Index(path, []byte("%20caf%C3%A9")); i >= 0 {
			path = append(append(append([]byte{}, path[:i]...), " café"...), path[i+12:]...)
		}
	}
	same := t.host == g.baseT.host && t.http == g.baseT.http
	form := r.intn(100)
	if !same {
		form = 63 + form*37/100 // absolute forms only
	}
	if form >= 86 && form < 93 && g.w.canonScheme(t) != g.w.canonScheme(g.baseT) {
		form = 70 // scheme-relative would take the base's scheme
	}
	frag := r.chance(0.08)
	switch {
	case form < 30: // root-relative
		b = append(b, path...)
	case form < 55: // relative path
		b = appendRel(b, g.basePath, path, r)
	case form < 63: // dot segments
		b = appendDots(b, path, r.intn(3))
	case form < 70:
		b = g.appendAbs(b, t, false, false)
		b = append(b, path...)
	case form < 78:
		b = g.appendAbs(b, t, true, false)
		b = append(b, path...)
	case form < 86:
		b = g.appendAbs(b, t, false, true)
		b = append(b, path...)
	case form < 93: // protocol-relative
		b = append(b, "//"...)
		b = g.w.appendHost(b, t.host)
		b = append(b, path...)
	default:
		b = g.appendAbs(b, t, r.chance(0.5), false)
		b = append(b, path...)
	}
	if frag {
		b = append(b, "#f"...)
		b = append(b, byte('a'+r.intn(26)))
	}
	return b
}

// appendAbs appends "http://host" (or https, see canonScheme) with
// optional mixed case and the scheme's default port.
func (g *gen) appendAbs(b []byte, t target, mixed, port bool) []byte {
	start := len(b)
	scheme := g.w.canonScheme(t)
	b = append(b, scheme...)
	b = g.w.appendHost(b, t.host)
	if mixed {
		bits := g.r.next()
		for i := start; i < len(b); i++ {
			c := b[i]
			if c >= 'a' && c <= 'z' && bits&1 == 1 {
				b[i] = c - 32
			}
			bits = bits>>1 | bits<<63
		}
	}
	if port && scheme == "https://" {
		b = append(b, ":443"...)
	} else if port {
		b = append(b, ":80"...)
	}
	return b
}

// appendRel appends the relative path from base directory to the target
// path (which may end with a query).
func appendRel(b, basePath, target []byte, r *rng) []byte {
	dir := basePath[:bytes.LastIndexByte(basePath, '/')+1]
	tp := target
	if i := bytes.IndexByte(tp, '?'); i >= 0 {
		tp = tp[:i]
	}
	i := 0
	for i < len(dir) && i < len(tp) && dir[i] == tp[i] {
		i++
	}
	i = bytes.LastIndexByte(dir[:i], '/') + 1
	ups := bytes.Count(dir[i:], []byte("/"))
	rest := target[i:]
	for range ups {
		b = append(b, "../"...)
	}
	if ups == 0 && (len(rest) == 0 || rest[0] == '?' || r.chance(0.25)) {
		b = append(b, "./"...)
	}
	return append(b, rest...)
}

// appendDots appends path with a dot segment inserted before its last
// segment: "./", "x/../" or "%2e/".
func appendDots(b, path []byte, kind int) []byte {
	p := path
	if i := bytes.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	cut := bytes.LastIndexByte(p, '/') + 1
	b = append(b, path[:cut]...)
	b = append(b, [...]string{"./", "x/../", "%2e/"}[kind]...)
	return append(b, path[cut:]...)
}

// link writes pre, the quoted raw spelling of t, and post, and records it.
func (g *gen) link(tag, pre string, t target, post string, fancyOK bool) {
	q := byte('"')
	if g.malformed {
		switch g.r.intn(4) {
		case 0:
			pre = strings.ToUpper(pre)
		case 1:
			q = '\''
		case 2:
			q = 0
			fancyOK = false
		}
	}
	t = g.spell(t)
	g.str(pre)
	if q != 0 {
		g.buf = append(g.buf, q)
	}
	start := len(g.buf)
	g.buf = g.appendRaw(g.buf, t, fancyOK)
	end := len(g.buf)
	if q != 0 {
		g.buf = append(g.buf, q)
	} else {
		g.buf = append(g.buf, ' ')
	}
	g.str(post)
	g.record(tag, t, g.buf[start:end], len(g.buf)-len(post)+strings.IndexByte(post, '>')+1)
}

func (g *gen) record(tag string, t target, raw []byte, end int) {
	g.nlinks++
	if _, ok := g.seen[t]; !ok {
		g.seen[t] = struct{}{}
		g.targets = append(g.targets, t)
	}
	if g.collect {
		g.links = append(g.links, Link{Tag: tag, Raw: string(raw), URL: g.w.url(t), End: end})
	}
}

// filler writes about n bytes of paragraph text.
func (g *gen) filler(n int) {
	f := g.w.fillerText()
	for n > 0 {
		k := min(n, 2048)
		off := g.r.intn(len(f) - k)
		g.str("<p>")
		start := len(g.buf)
		g.buf = append(g.buf, f[off:off+k]...)
		if g.hi.kind == BadCharset {
			for j := 0; j < 4; j++ {
				i := start + g.r.intn(k)
				g.buf[i] = [...]byte{0xff, 0xe9, 0xc3, 0x80}[j]
			}
		}
		g.str("</p>\n")
		n -= k + 8
	}
}

// fillerText is 64 KiB of deterministic ASCII prose without markup.
func (w *Web) fillerText() string { return fillerOnce() }

var fillerOnce = sync.OnceValue(func() string {
	words := strings.Fields(`the crawler fetches a page extracts its links and sends them on
	every host gets one request at a time web servers answer slowly sometimes and caches remember
	popular addresses while the frontier keeps what is still to be fetched on disk mercator used
	five hundred threads per machine and a duplicate eliminator with sorted fingerprints`)
	var b strings.Builder
	r := rng{s: 42}
	for b.Len() < 64<<10 {
		b.WriteString(words[r.intn(len(words))])
		if r.chance(0.08) {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
})

// pageSize draws an HTML page size (bytes).
func (g *gen) pageSize() int {
	s := g.r.lognormal(g.w.sizeMu, g.w.cfg.PageSizeSigma)
	return int(math.Max(1500, math.Min(s, 1<<20)))
}

// outDegree draws the number of links of an HTML page.
func (g *gen) outDegree() int {
	d := math.Round(g.r.lognormal(g.w.linkMu, g.w.linkSigma))
	return int(math.Max(3, math.Min(d, float64(g.w.cfg.MaxLinks))))
}

// zipf draws from the Zipf distribution over [0, n) with exponent s,
// reusing the constants of the previous call when n and s are the same.
func (g *gen) zipf(n int, s float64) int {
	for i := range g.zipfCache {
		if z := &g.zipfCache[i]; z.n == n && z.s == s {
			return z.draw(&g.r)
		}
	}
	z := &g.zipfCache[g.zipfNext]
	g.zipfNext = (g.zipfNext + 1) % len(g.zipfCache)
	*z = newZipf(n, s)
	return z.draw(&g.r)
}

// zipfHost draws a host by popularity.
func (g *gen) zipfHost() int32 { return int32(g.w.hostZipf.draw(&g.r)) }
