package simweb

import (
	"net/http"
	"strconv"
	"time"
)

// robots writes /robots.txt (and the hops of redirected ones).
func (g *gen) robots() {
	hi, t := g.hi, g.self
	g.ctype = "text/plain; charset=utf-8"
	other := "# robots.txt of a simweb host\nUser-agent: otherbot\nDisallow: /\n\n"
	switch hi.kind {
	case Robots404:
		g.status = http.StatusNotFound
		g.str("not found\n")
	case Robots5xx:
		g.status = http.StatusServiceUnavailable
		g.retryAfter = true
		g.str("try again later\n")
	case RobotsRedirect:
		next, at := g.w.robotsHops(hi)-1, g.w.robotsHopHost(hi, t.host)
		if t.kind == pkRobotsHop {
			next, at = t.a-1, t.host
		}
		if next >= 0 {
			g.status = [...]int{301, 302, 307, 308}[next%4]
			g.location = string(g.appendRaw(nil, target{host: at, kind: pkRobotsHop, a: next}, false))
			g.str("moved\n")
			return
		}
		g.str(other + "User-agent: *\nDisallow: /img/\n")
	case RobotsGarbage:
		for i := 0; i < 3000; i++ {
			c := byte(0x80 | g.r.next()&0x7f)
			switch {
			case i%61 == 60:
				c = '\n'
			case i%7 == 3:
				c = ' '
			}
			g.buf = append(g.buf, c)
		}
	case RobotsHuge:
		g.str(other + "User-agent: *\nDisallow: /private/\nDisallow: /doc/\n")
		for len(g.buf) < 600<<10 {
			g.str("# padding: this robots.txt is longer than the 500 KiB a crawler must parse ........\n")
		}
		g.str("Disallow: /img/\n") // beyond 500 KiB: must be ignored
	case RobotsDisallow:
		g.str(other + "User-agent: *\nDisallow: /private/\nDisallow: /doc/\n")
		if d := dirsOf(hi.n); d > 1 {
			g.str("Disallow: /d")
			g.buf = strconv.AppendInt(g.buf, d-1, 10)
			g.str("/\n")
		}
	case CrawlDelay:
		g.str(other + "User-agent: *\nCrawl-delay: ")
		g.buf = strconv.AppendFloat(g.buf, g.w.crawlDelay(t.host).Seconds(), 'f', 2, 64)
		g.str("\nAllow: /\n")
	default:
		g.str(other + "User-agent: *\nAllow: /\n")
		g.robotsSitemapLines()
	}
}

// robotsHopHost is the host that serves the redirect hops of the
// robots.txt of host h (a RobotsRedirect host): h itself, or for the
// first RobotsRedirect host and every other one after the second, the
// second one (whose own chain, 7 hops, is the longest, so it serves every
// hop number) — the
// pattern of sites that serve their robots.txt from one central host, which
// a crawler must follow across hosts (RFC 9309 §2.3.1.2) in that host's
// politeness slot.
func (w *Web) robotsHopHost(hi hostInfo, h int32) int32 {
	if hi.ord%2 == 0 && len(w.byKind[RobotsRedirect]) >= 2 {
		return w.byKind[RobotsRedirect][1]
	}
	return h
}

// crawlDelay is the Crawl-delay announced by host h (0 unless CrawlDelay).
func (w *Web) crawlDelay(h int32) time.Duration {
	if w.hosts[h].kind != CrawlDelay {
		return 0
	}
	u := float64(hash3(w.cfg.Seed, uint64(h), 0xc4a1)>>11) / (1 << 53)
	d := time.Duration((0.25 + 0.75*u) * float64(w.cfg.CrawlDelay))
	return d.Round(10 * time.Millisecond)
}

// CrawlDelay returns the Crawl-delay host announces in its robots.txt, 0 if
// none (or the host is unknown).
func (w *Web) CrawlDelay(host string) time.Duration {
	h, ok := w.HostIndex(host)
	if !ok {
		return 0
	}
	return w.crawlDelay(int32(h))
}
