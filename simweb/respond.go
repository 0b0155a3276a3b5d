package simweb

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrUnknownHost is returned by Respond for a host name the web does not have.
var ErrUnknownHost = errors.New("simweb: unknown host")

// ErrSchemeNotServed is returned by RespondScheme for a scheme the host does
// not serve (nothing listens on its port: a network failure).
var ErrSchemeNotServed = errors.New("simweb: scheme not served by the host")

// Response is one generated HTTP response.
type Response struct {
	Status int
	Header http.Header
	// Body is the body as sent on the wire. For streamed responses (huge,
	// stalling and gzip-bomb pages) it is only the first part, which holds
	// every link; WriteBody writes the whole body.
	Body []byte
	// Size is the length of the whole body on the wire.
	Size int64
	// Links are the links written in Body, in document order, whatever the
	// status and Content-Type (the oracle decides which are discovered). For
	// a redirect, Links[0] is the Location (Tag "location", End 0).
	Links []Link
	// Base is the raw <base href> value, or "".
	Base string
	// Latency is how long the server waits before sending the header.
	Latency time.Duration
	// Stall is how long the server pauses after Body before the rest.
	Stall time.Duration

	w       *Web
	tail    tailKind
	tailLen int64
}

// Respond generates the response of host (a lower-case host name without
// port) to a GET of pathAndQuery (the request-target, e.g. "/d1/p5.html").
// The same web gives byte-identical responses every time.
func (w *Web) Respond(host, pathAndQuery string) (*Response, error) {
	h, ok := w.HostIndex(host)
	if !ok {
		return nil, ErrUnknownHost
	}
	return w.RespondScheme(host, pathAndQuery, w.hosts[h].tls&tlsOn != 0)
}

// RespondScheme is Respond for a request over https (or plain http): a
// plain request to a host that redirects to https is answered 301, and a
// scheme the host does not serve is ErrSchemeNotServed.
func (w *Web) RespondScheme(host, pathAndQuery string, https bool) (*Response, error) {
	h, ok := w.HostIndex(host)
	if !ok {
		return nil, ErrUnknownHost
	}
	if !w.serves(int32(h), https) {
		return nil, fmt.Errorf("%w: %s over https=%v", ErrSchemeNotServed, host, https)
	}
	g := w.getGen(true)
	defer putGen(g)
	w.buildScheme(g, int32(h), pathAndQuery, https)
	resp := &Response{
		Status: g.status, Header: g.header(), Body: bytes.Clone(g.buf),
		Size: int64(len(g.buf)) + g.tailLen, Links: append([]Link(nil), g.links...),
		Base: g.baseRaw, Latency: g.latency, Stall: g.stall, w: w, tail: g.tail, tailLen: g.tailLen,
	}
	return resp, nil
}

// header builds the response header of g.
func (g *gen) header() http.Header {
	hd := http.Header{}
	g.eachHeader(func(k, v string) { hd[k] = append(hd[k], v) })
	if g.noCT {
		hd["Content-Type"] = nil
	}
	return hd
}

func (g *gen) eachHeader(f func(k, v string)) {
	if !g.noCT {
		f("Content-Type", g.ctype)
	}
	if g.location != "" {
		f("Location", g.location)
	}
	if g.encoding != "" {
		f("Content-Encoding", g.encoding)
	}
	if g.retryAfter {
		f("Retry-After", "1")
	}
	if g.hi.tls&tlsHSTS != 0 {
		f("Strict-Transport-Security", hstsValue)
	}
	f("Content-Length", strconv.FormatInt(int64(len(g.buf))+g.tailLen, 10))
}

// WriteBody writes the whole body to dst: Body, then (after Stall, calling
// flush first) the streamed rest. It returns early with ctx's error.
func (r *Response) WriteBody(ctx context.Context, dst io.Writer, flush func()) error {
	if _, err := dst.Write(r.Body); err != nil {
		return err
	}
	return writeTail(ctx, r.w, dst, flush, r.Stall, r.tail, r.tailLen)
}

func writeTail(ctx context.Context, w *Web, dst io.Writer, flush func(), stall time.Duration, tail tailKind, n int64) error {
	if stall > 0 {
		if flush != nil {
			flush()
		}
		t := time.NewTimer(stall)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	switch tail {
	case tailFiller:
		f := w.fillerText()
		const end = "</body></html>\n"
		for n > int64(len(end)) {
			if err := ctx.Err(); err != nil {
				return err
			}
			k := min(n-int64(len(end)), int64(len(f)))
			if _, err := io.WriteString(dst, f[:k]); err != nil {
				return err
			}
			n -= k
		}
		_, err := io.WriteString(dst, end[:n])
		return err
	case tailBomb:
		m := w.bomb()
		for n > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := dst.Write(m[:min(n, int64(len(m)))]); err != nil {
				return err
			}
			n -= int64(len(m))
		}
	}
	return nil
}

const bombChunk = 1 << 20

// bomb returns one gzip member that inflates to bombChunk zero bytes.
func (w *Web) bomb() []byte {
	w.bombOnce.Do(func() { w.bombMember = gzipBytes(make([]byte, bombChunk)) })
	return w.bombMember
}

func gzipBytes(p []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(p)
	zw.Close()
	return b.Bytes()
}

// build fills g with the response of host h to pq.
func (w *Web) build(g *gen, h int32, pq string) {
	t := w.parse(h, pq)
	g.self, g.hi = t, w.hosts[h]
	g.setBase(t)
	if t.kind == pkNone {
		g.r = newRng(w.cfg.Seed, uint64(h), uint64(len(pq))^hashString(pq))
	} else {
		g.r = newRng(w.cfg.Seed^uint64(t.kind)<<56, uint64(h)<<20^uint64(t.b), uint64(t.a))
	}
	g.latency = w.latency(&g.r, g.hi)
	g.status = http.StatusOK
	g.malformed = g.hi.kind == Malformed && t.kind == pkArticle
	g.linksFirst = g.malformed || (g.hi.kind == BadCharset && t.kind == pkArticle)
	g.asciiOnly = g.linksFirst
	g.limit = 3500
	switch t.kind {
	case pkNone:
		g.status = http.StatusNotFound
		g.smallPage("Not found ", func() { g.a(target{host: h, kind: pkHome}) })
	case pkHome:
		if g.hi.kind == Trap {
			g.trapPage()
		} else {
			g.home()
		}
	case pkDir:
		g.dirIndex()
	case pkArticle:
		g.article()
	case pkPrint:
		g.smallPage("Printable ", func() {
			g.a(target{host: h, kind: pkArticle, a: t.a})
			g.a(target{host: h, kind: pkHome})
		})
	case pkImg, pkDoc, pkCSS, pkJS, pkMedia:
		g.resource()
	case pkOrphan, pkPrivate:
		g.smallPage("Page ", func() { g.a(target{host: h, kind: pkHome}) })
	case pkRobots, pkRobotsHop:
		g.robots()
	case pkChain, pkLoop, pkCross:
		g.redirect()
	case pkError:
		g.status = int(t.b)
		g.retryAfter = t.b == 503
		g.smallPage("Error ", func() {
			g.a(target{host: h, kind: pkOrphan, a: t.a})
			g.a(target{host: h, kind: pkOrphan, a: t.a + 2})
		})
	case pkStall, pkHuge:
		g.linksFirst, g.asciiOnly = true, true
		g.tail = tailFiller
		g.htmlPage("Special ", func() { g.a(target{host: h, kind: pkHome}) }, true)
		total := int64(16 << 10)
		if t.kind == pkHuge {
			total = w.cfg.HugeMax >> t.a
		} else {
			g.stall = w.cfg.StallTime
		}
		g.tailLen = max(total-int64(len(g.buf)), 64)
	case pkBomb:
		g.ctype, g.encoding = "text/html", "gzip"
		g.buf = append(g.buf, gzipBytes([]byte("<!DOCTYPE html>\n<html><head><title>bomb</title></head><body>\n"))...)
		g.tail = tailBomb
		g.tailLen = (w.cfg.BombSize / bombChunk) * int64(len(w.bomb()))
	case pkType:
		g.wrongType()
	case pkCal, pkSess, pkDeep:
		g.trapPage()
	case pkSitemap, pkSitemapTxt, pkSitemapIndex, pkSitemapGz, pkSitemapNested, pkSitemapDeep:
		g.sitemapFile()
	case pkOnly:
		g.onlyPage()
	}
}

func hashString(s string) uint64 {
	var x uint64 = 0xcbf29ce484222325
	for i := 0; i < len(s); i++ {
		x = (x ^ uint64(s[i])) * 0x100000001b3
	}
	return x
}

// latency draws the response latency of a page.
func (w *Web) latency(r *rng, hi hostInfo) time.Duration {
	m := float64(w.cfg.LatencyMedian)
	d := time.Duration(math.Min(r.lognormal(math.Log(math.Max(m, 1)), 0.5), 10*m))
	if m == 0 {
		d = 0
	}
	if hi.kind == Slow {
		d += w.cfg.SlowLatency
	}
	return d
}

// randomBytes appends n pseudo-random bytes that contain no '<'.
func (g *gen) randomBytes(n int) {
	for n > 0 {
		v := g.r.next()
		for i := 0; i < 8 && n > 0; i, n = i+1, n-1 {
			c := byte(v >> (8 * i))
			if c == '<' {
				c = '>'
			}
			g.buf = append(g.buf, c)
		}
	}
}

func (g *gen) resource() {
	r := &g.r
	switch g.self.kind {
	case pkImg:
		g.ctype = "image/png"
		g.str("\x89PNG\r\n\x1a\n")
		g.randomBytes(1000 + r.intn(20000))
	case pkDoc:
		g.ctype = "application/pdf"
		g.str("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
		g.randomBytes(5000 + r.intn(40000))
	case pkMedia:
		g.ctype = "video/mp4"
		g.str("\x00\x00\x00\x18ftypmp42")
		g.randomBytes(10000 + r.intn(20000))
	case pkCSS:
		g.ctype = "text/css"
		g.str("body { margin: 0 auto; max-width: 40em; font-family: serif }\n/* ")
		g.buf = append(g.buf, g.w.fillerText()[:1000+r.intn(3000)]...)
		g.str(" */\n")
	case pkJS:
		g.ctype = "text/javascript"
		g.str("'use strict';\n// ")
		g.buf = append(g.buf, strings.ReplaceAll(g.w.fillerText()[:1000+r.intn(3000)], "\n", " ")...)
		g.str("\nconsole.log('ok');\n")
	}
}

// redirect writes a 3xx with a Location and a body whose decoy link must not
// be followed.
func (g *gen) redirect() {
	t := g.self
	h := t.host
	var next target
	code := http.StatusFound
	switch t.kind {
	case pkChain:
		code = [...]int{301, 302, 307, 308}[(t.a+t.b)%4]
		if t.b > 0 {
			next = target{host: h, kind: pkChain, a: t.a, b: t.b - 1}
		} else if g.hi.n > 1 {
			next = target{host: h, kind: pkArticle, a: 1 + t.a%int64(g.hi.n-1)}
		} else {
			next = target{host: h, kind: pkHome}
		}
	case pkLoop:
		code = [...]int{302, 307}[t.b]
		next = target{host: h, kind: pkLoop, a: t.a, b: 1 - t.b}
	case pkCross:
		code = http.StatusMovedPermanently
		o := (int(h) + 1 + 7*int(t.a)) % len(g.w.hosts)
		if g.w.hosts[o].kind == Trap {
			o = 0
		}
		next = target{host: int32(o), kind: pkHome}
	}
	g.status = code
	next = g.spell(next)
	g.location = string(g.appendRaw(nil, next, false))
	if g.collect {
		g.links = append(g.links, Link{Tag: "location", Raw: g.location, URL: g.w.url(next)})
	}
	g.smallPage("Moved ", func() { g.a(target{host: h, kind: pkOrphan, a: 1}) }) // a decoy
}

// wrongType writes the Content-Type variants of WrongType hosts.
func (g *gen) wrongType() {
	h, k := g.self.host, g.self.a
	switch k {
	case 0, 2: // HTML served as text/plain or octet-stream: links must not be followed
		g.smallPage("Plain ", func() {
			g.a(target{host: h, kind: pkOrphan, a: 0})
			g.a(target{host: h, kind: pkOrphan, a: 1})
		})
		g.ctype = [...]string{"text/plain; charset=utf-8", "", "application/octet-stream"}[k]
	case 1: // no Content-Type: sniffed as HTML
		g.htmlPage("Untyped ", func() { g.a(target{host: h, kind: pkHome}) }, true)
		g.noCT = true
	case 3: // an image served as text/html
		g.self.kind = pkImg
		g.resource()
		g.self.kind = pkType
		g.ctype = "text/html"
	case 4: // XHTML
		g.htmlPage("XHTML ", func() { g.a(target{host: h, kind: pkHome}) }, true)
		g.ctype = "application/xhtml+xml; charset=utf-8"
	case 5:
		g.htmlPage("Shouting ", func() { g.a(target{host: h, kind: pkHome}) }, true)
		g.ctype = `TEXT/HTML; Charset="UTF-8"`
	}
}

// trapPage writes a page of an infinite URL space; it links only to its
// own host.
func (g *gen) trapPage() {
	t, h := g.self, g.self.host
	g.smallPage("Trap ", func() {
		switch t.kind {
		case pkHome:
			g.a(target{host: h, kind: pkCal, a: 0})
			g.a(target{host: h, kind: pkSess, a: 0, b: 0})
			g.a(target{host: h, kind: pkDeep, b: 0})
		case pkCal:
			g.a(target{host: h, kind: pkCal, a: t.a + 1})
			if t.a > 0 {
				g.a(target{host: h, kind: pkCal, a: t.a - 1})
			}
			g.a(target{host: h, kind: pkSess, a: t.a % 100, b: 0})
		case pkSess:
			g.a(target{host: h, kind: pkSess, a: t.a + 1, b: t.b})
			g.a(target{host: h, kind: pkSess, a: t.a, b: t.b + 1})
			g.a(target{host: h, kind: pkHome})
		case pkDeep:
			g.a(target{host: h, kind: pkDeep, b: t.b + 1})
			g.a(target{host: h, kind: pkHome})
		}
	})
}
