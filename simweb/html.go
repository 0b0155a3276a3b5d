package simweb

import "strconv"

// linkClass is what a new link points at.
type linkClass uint8

const (
	clHTML linkClass = iota
	clImg
	clCSS
	clJS
	clDoc
	clMedia
)

// specialCount is the number of special pages a host of kind k has.
func specialCount(k Pathology) int {
	switch k {
	case RobotsDisallow:
		return numPrivate
	case Redirects:
		return numChains + numLoops + numCross
	case Errors:
		return len(errorCodes) * numErrorsPer
	case Stall:
		return numStall
	case Huge:
		return numHuge
	case GzipBomb:
		return numBomb
	case WrongType:
		return numTypes
	}
	return 0
}

// special returns special page i of host h.
func (w *Web) special(h int32, i int) target {
	t := target{host: h, a: int64(i)}
	switch w.hosts[h].kind {
	case RobotsDisallow:
		t.kind = pkPrivate
	case Redirects:
		switch {
		case i < numChains:
			t.kind, t.b = pkChain, chainHops(int64(i))
		case i < numChains+numLoops:
			t.kind, t.a = pkLoop, int64(i-numChains)
		default:
			t.kind, t.a = pkCross, int64(i-numChains-numLoops)
		}
	case Errors:
		t.kind, t.a, t.b = pkError, int64(i%numErrorsPer), errorCodes[i/numErrorsPer]
	case Stall:
		t.kind = pkStall
	case Huge:
		t.kind = pkHuge
	case GzipBomb:
		t.kind = pkBomb
	case WrongType:
		t.kind = pkType
	}
	return t
}

// newTarget draws a fresh link target of class cl for the current page.
func (g *gen) newTarget(cl linkClass) target {
	return g.newTargetOn(cl, g.pickHost(), false)
}

// pickHost draws the host of a new link: the page's own host with
// probability SameHostShare, else a host by Zipf popularity.
func (g *gen) pickHost() int32 {
	if g.hi.kind != Trap && g.r.chance(1-g.w.cfg.SameHostShare) {
		return g.zipfHost()
	}
	return g.self.host
}

// newTargetOn draws a new link target of class cl on host h.
func (g *gen) newTargetOn(cl linkClass, h int32, uniform bool) target {
	r := &g.r
	if g.w.hosts[h].kind == Trap && h != g.self.host {
		if cl == clHTML {
			return target{host: h, kind: pkHome}
		}
		h = g.self.host
	}
	n := g.w.hosts[h].n
	zipf := func(n int, s float64) int {
		if uniform {
			return r.intn(n)
		}
		return g.zipf(n, s)
	}
	switch cl {
	case clImg:
		return target{host: h, kind: pkImg, a: int64(zipf(int(imgsOf(n)), 0.8))}
	case clCSS:
		return target{host: h, kind: pkCSS, a: int64(r.intn(numCSS))}
	case clJS:
		return target{host: h, kind: pkJS, a: int64(r.intn(numJS))}
	case clDoc:
		return target{host: h, kind: pkDoc, a: int64(zipf(int(docsOf(n)), 0.8))}
	case clMedia:
		return target{host: h, kind: pkMedia, a: int64(r.intn(numMedia))}
	}
	if r.chance(0.01) {
		return target{host: g.self.host, kind: pkExternal, a: int64(r.intn(len(externals)))}
	}
	if h == g.self.host {
		if ds := g.w.cfg.DeadLinkShare; ds > 0 && cl == clHTML && g.hi.kind != Trap && r.chance(ds) {
			// a link to a page that does not exist (404), from a
			// pool of 8 per article: a wiki's red links
			return target{host: h, kind: pkArticle, a: int64(n) + 3 + int64(r.intn(8*int(n)))}
		}
		u := r.float()
		switch {
		case u < 0.015:
			return target{host: h, kind: pkArticle, a: int64(n) + int64(r.intn(3))} // dead link
		case u < 0.045 && specialCount(g.hi.kind) > 0:
			return g.w.special(h, r.intn(specialCount(g.hi.kind)))
		case u < 0.07:
			return target{host: h, kind: pkDir, a: int64(r.intn(int(dirsOf(n))))}
		case u < 0.08 && n > 1:
			return target{host: h, kind: pkPrint, a: 1 + int64(g.zipf(int(n-1), g.w.cfg.ZipfPages))}
		case u < 0.10 && (g.self.kind == pkArticle || g.self.kind == pkHome || g.self.kind == pkDir):
			return g.self
		}
	}
	if h != g.self.host && r.chance(0.5) {
		// Links to other hosts favour their home pages: with host
		// popularity this makes the homes of popular hosts the hubs
		// "linked from everywhere".
		return target{host: h, kind: pkHome}
	}
	if a := zipf(int(n), g.w.cfg.ZipfPages); a > 0 {
		return target{host: h, kind: pkArticle, a: int64(a)}
	}
	return target{host: h, kind: pkHome}
}

// sampleOne writes one link slot: a repeat of an earlier target of the
// page (RepeatShare of the time) or a new one.
func (g *gen) sampleOne() {
	r := &g.r
	// Deliberate repeats top up the accidental ones (new targets that
	// collide) to RepeatShare.
	repeats := g.nlinks - len(g.targets)
	if len(g.targets) > 0 && float64(repeats) < g.w.cfg.RepeatShare*float64(g.nlinks+1) &&
		r.chance(g.w.cfg.RepeatShare) {
		g.emitFor(g.targets[r.intn(len(g.targets))])
		return
	}
	u := r.intn(100)
	cl := clHTML
	switch {
	case u < 12:
		cl = clImg
	case u < 15:
		cl = clCSS
	case u < 18:
		cl = clJS
	case u < 22:
		cl = clDoc
	case u < 24:
		cl = clMedia
	}
	var t target
	h := g.pickHost()
	for try := 0; try < 12; try++ {
		if try == 4 && cl >= clCSS && cl != clDoc {
			cl = clHTML // tiny pools: css, js, media
		}
		if try == 8 && g.hi.kind != Trap && r.chance(0.5) {
			// The host's pool is exhausted (a big page on a small host):
			// half the time link elsewhere instead of repeating, which
			// balances the same-host and the repeat share.
			h = g.zipfHost()
		}
		t = g.newTargetOn(cl, h, try >= 4)
		if _, dup := g.seen[t]; !dup {
			break
		}
	}
	g.emitFor(t)
}

// emitFor writes a link to t in an element suited to what t is.
func (g *gen) emitFor(t target) {
	r := &g.r
	switch t.kind {
	case pkImg:
		if r.chance(0.3) {
			g.imgSrcset(t)
			return
		}
		g.link("img", `<img alt="" src=`, t, `>`, false)
	case pkCSS:
		g.link("link", `<link rel="stylesheet" href=`, t, `>`, false)
	case pkJS:
		g.link("script", `<script src=`, t, `></script>`, false)
	case pkDoc:
		if r.chance(0.5) {
			g.link("embed", `<embed type="application/pdf" src=`, t, `>`, false)
		} else {
			g.link("a", `<a href=`, t, `>the PDF</a>`, true)
		}
	case pkMedia:
		if r.chance(0.5) {
			g.link("video", `<video src=`, t, `></video>`, false)
		} else {
			g.link("source", `<audio><source src=`, t, `></audio>`, false)
		}
	default:
		u := r.intn(100)
		switch {
		case u < 86:
			g.link("a", `<a href=`, t, `>more</a>`, true)
		case u < 90:
			g.link("area", `<map name="m"><area shape="rect" coords="0,0,9,9" alt="x" href=`, t, `></map>`, true)
		case u < 93:
			g.link("iframe", `<iframe src=`, t, `></iframe>`, true)
		case u < 95:
			g.link("frame", `<frame src=`, t, `>`, true)
		case u < 97:
			g.link("form", `<form method="get" action=`, t, `><input name="q"></form>`, true)
		default:
			g.link("link", `<link rel="alternate" href=`, t, `>`, true)
		}
	}
	g.str("\n")
}

// imgSrcset writes <img src=t srcset="u 1x, v 2x"> with two more images.
func (g *gen) imgSrcset(t target) {
	u, v := g.newTarget(clImg), g.newTarget(clImg)
	g.str(`<img alt="" src="`)
	s0 := len(g.buf)
	g.buf = g.appendRaw(g.buf, t, false)
	e0 := len(g.buf)
	g.str(`" srcset="`)
	s1 := len(g.buf)
	g.buf = g.appendRaw(g.buf, u, false)
	e1 := len(g.buf)
	g.str(` 1x, `)
	s2 := len(g.buf)
	g.buf = g.appendRaw(g.buf, v, false)
	e2 := len(g.buf)
	g.str(` 2x">`)
	end := len(g.buf)
	g.record("img", t, g.buf[s0:e0], end)
	g.record("srcset", u, g.buf[s1:e1], end)
	g.record("srcset", v, g.buf[s2:e2], end)
}

// charset variants of BadCharset articles: Content-Type, <meta>.
var badCharsets = [...][2]string{
	{"text/html; charset=x-bogus-charset", `<meta charset="x-bogus-charset">`},
	{"text/html; charset=iso-8859-1", `<meta charset="iso-8859-1">`},
	{"text/html", `<meta charset="utf-8">`},
	{"text/html; charset=windows-1252", `<meta charset="utf-16">`},
}

// head writes the document start up to the </title> (the head stays open).
func (g *gen) head(xhtml bool, meta, title string) {
	if xhtml {
		g.str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><head>")
	} else {
		g.str("<!DOCTYPE html>\n<html lang=\"en\"><head>")
	}
	g.str(meta)
	g.str("<title>")
	g.title(title)
	g.str("</title>\n")
}

// title writes the page's title: the prefix, the page number and the host.
func (g *gen) title(prefix string) {
	g.str(prefix)
	g.buf = strconv.AppendInt(g.buf, g.self.a, 10)
	g.str(" of ")
	g.buf = g.w.appendHost(g.buf, g.self.host)
}

// htmlPage writes a whole page: head (optional <base> and meta refresh),
// the structural links, then sampled links to an out-degree drawn from the
// configured distribution, with filler to a drawn size.
func (g *gen) htmlPage(title string, structural func(), sampled bool) {
	r := &g.r
	size := g.pageSize()
	L := g.outDegree()
	xhtml := !g.linksFirst && g.self.kind == pkArticle && r.chance(0.1)
	g.ctype = "text/html; charset=utf-8"
	meta := `<meta charset="utf-8">`
	if xhtml {
		g.ctype, meta = "application/xhtml+xml", `<meta charset="utf-8"/>`
	}
	if g.hi.kind == BadCharset && g.self.kind == pkArticle {
		v := badCharsets[g.self.a%int64(len(badCharsets))]
		g.ctype, meta = v[0], v[1]
	}
	g.head(xhtml, meta, title)
	if g.self.kind == pkArticle && g.hi.kind != Trap && r.chance(0.08) {
		d := target{host: g.self.host, kind: pkDir, a: int64(r.intn(int(dirsOf(g.hi.n))))}
		g.str(`<base href="`)
		s := len(g.buf)
		g.buf = g.appendAbs(g.buf, d, r.chance(0.5), r.chance(0.3))
		g.buf = g.w.appendPath(g.buf, d)
		g.baseRaw = string(g.buf[s:])
		g.str("\">\n")
		g.hasBase = true
		g.setBase(d)
		g.link("a", `<a href=`, d, `>index</a>`, false)
	}
	if g.self.kind == pkArticle && g.hi.kind != Trap && r.chance(0.05) {
		t := target{host: g.self.host, kind: pkHome}
		if g.hi.n > 1 {
			t = target{host: g.self.host, kind: pkArticle, a: 1 + int64(r.intn(int(g.hi.n-1)))}
		}
		g.str(`<meta http-equiv="refresh" content="30; url=`)
		s := len(g.buf)
		g.buf = g.appendRaw(g.buf, t, false)
		e := len(g.buf)
		g.str("\">\n")
		g.record("meta-refresh", t, g.buf[s:e], e+2)
	}
	g.str("</head>\n<body>\n<h1>")
	g.title(title)
	g.str("</h1>\n")
	perLink := 0
	if !g.linksFirst {
		perLink = max(0, (size-len(g.buf)-90*L)/(L+1))
	}
	structural()
	for sampled && g.nlinks < L {
		if g.linksFirst && len(g.buf) > g.limit {
			break
		}
		g.sampleOne()
		if perLink > 0 {
			g.filler(perLink/2 + r.intn(perLink+1))
		}
	}
	if g.malformed {
		g.decoys()
	}
	if g.tail == tailNone && len(g.buf) < size {
		g.filler(size - len(g.buf))
	}
	if g.tail == tailNone {
		g.str("</body></html>\n")
	}
}

// decoys writes URLs a correct extractor must not find, and broken markup.
func (g *gen) decoys() {
	g.str(`<!-- <a href="/orphan/0.html">old</a> -->` + "\n")
	g.str(`<script>var s = '<a href="/orphan/1.html">x</a>';</script>` + "\n")
	g.str(`<textarea><img src="/orphan/2.html"></textarea>` + "\n")
	g.str(`<a data-href="/orphan/3.html">no href</a>` + "\n")
	g.str("<div><span><b>unclosed <i>tags </p></td></tr> a < b && c > d <p <p>\n")
}

// leaf writes a small HTML page whose links are given by structural.
func (g *gen) smallPage(title string, structural func()) {
	g.ctype = "text/html; charset=utf-8"
	g.head(false, `<meta charset="utf-8">`, title)
	g.str("</head>\n<body>\n")
	structural()
	g.filler(600)
	g.str("</body></html>\n")
}

func (g *gen) a(t target) { g.link("a", `<a href=`, t, `>link</a>`, true); g.str("\n") }

// articleLike writes an article, the home page, or a page that looks like
// one (special pages with links first).
func (g *gen) article() {
	h, n, a := g.self.host, g.hi.n, g.self.a
	g.htmlPage("Article ", func() {
		g.nav()
		g.a(target{host: h, kind: pkHome})
		g.a(target{host: h, kind: pkDir, a: a % dirsOf(n)})
		if a+1 < int64(n) {
			g.a(target{host: h, kind: pkArticle, a: a + 1})
		}
	}, true)
}

func (g *gen) home() {
	h, n := g.self.host, g.hi.n
	g.htmlPage("Home page ", func() {
		g.nav()
		for j := int64(0); j < dirsOf(n); j++ {
			g.a(target{host: h, kind: pkDir, a: j})
		}
		for i := 0; i < specialCount(g.hi.kind); i++ {
			g.a(g.w.special(h, i))
		}
		if n > 1 {
			g.a(target{host: h, kind: pkArticle, a: 1})
		}
		for d := int32(1); d <= 2; d++ {
			g.a(target{host: (h + d) % int32(len(g.w.hosts)), kind: pkHome})
		}
	}, true)
}

func (g *gen) dirIndex() {
	h, n, j := g.self.host, g.hi.n, g.self.a
	g.smallPage("Index ", func() {
		g.a(target{host: h, kind: pkHome})
		D := dirsOf(n)
		for a, k := j, 0; a < int64(n) && k < 20; a, k = a+D, k+1 {
			if a > 0 {
				g.a(target{host: h, kind: pkArticle, a: a})
			}
		}
	})
}
