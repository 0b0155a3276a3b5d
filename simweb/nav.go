package simweb

// nav writes the host's site navigation: the same Config.NavLinks links
// on every article and home page of a host (a sidebar, a header, a footer:
// the boilerplate every real site repeats on each page). They go to the
// host's home page, its directory indexes and its most popular articles,
// interleaved, and count toward the page's out-degree. Trap hosts have none.
//
// Site navigation is what gives a real site's link stream its strongest
// locality: a handful of URLs referenced from every page (see
// docs/caching-study.md, "What simweb must look like").
func (g *gen) nav() {
	if g.w.cfg.NavLinks <= 0 || g.hi.kind == Trap {
		return
	}
	h, n := g.self.host, int64(g.hi.n)
	g.str("<nav>\n")
	g.a(target{host: h, kind: pkHome})
	d, a := int64(0), int64(1)
	for k := 1; k < g.w.cfg.NavLinks; k++ {
		switch {
		case k%2 == 1 && d < dirsOf(g.hi.n):
			g.a(target{host: h, kind: pkDir, a: d})
			d++
		case a < n:
			g.a(target{host: h, kind: pkArticle, a: a})
			a++
		case d < dirsOf(g.hi.n):
			g.a(target{host: h, kind: pkDir, a: d})
			d++
		default:
			k = g.w.cfg.NavLinks // the host has no more pages
		}
	}
	g.str("</nav>\n")
}
