package crawl

import (
	"strconv"
	"strings"

	"github.com/sextant-crawler/sextant/internal/fingerprint"
)

// URL annotations: how a queued URL was reached.
//
// The DUE, the frontier and the host splitter hold a URL as a string. What
// the crawl log needs about how the URL was discovered (its via and hop
// path, Heritrix's "referrer" and "path from seed") travels inside that
// string as fragments, after the sitemap mark if any:
//
//	URL [#sextant-sitemap[-child]] [#h=HOPS] [#v=VIA]
//
// A canonical URL has no fragment, so the first '#' ends the URL; the via
// is canonical too, so no annotation holds a '#'. That way the via and hop
// path are stored, spooled, sent between nodes and recovered after a kill
// exactly like the URL (and like the sitemap mark before them), with no
// change to any format on disk or on the wire; the fingerprint is the bare
// URL's (urlFP), so annotations never change what is seen.
//
// VIA is stored relative to the URL when both share more than an origin
// (most links are on-site, many in the same directory): the length of the
// prefix they share, '.', and the rest ("31.index.html" for a via of
// http://a.test/blog/2024/index.html beside http://a.test/blog/2024/post);
// an absolute via starts with a scheme, never a digit. A page's links
// share its via, so the frontier's and the spool's block compression
// (pebble's, the batch codec's) squeeze the repeats further. A seed has no
// annotation (empty hop path and via), and so has a URL queued by a
// version before annotations.
const (
	annotHops = "#h="
	annotVia  = "#v="
	// maxAnnotated bounds an annotated URL: the via is dropped rather than
	// let it push the string over hostsplit's default per-URL limit
	// (Limits.MaxURLLen, 4096), which would drop the URL itself.
	maxAnnotated = 4000
)

// annot is what a queued URL's annotations say.
type annot struct {
	sm     uint8  // sitemap level (smPage: an ordinary URL)
	smHops uint8  // redirects that led to a sitemap (its mark's -rN)
	hops   string // hop path from the seed (Heritrix letters; "" for a seed)
	via    string // absolute URL the link was found on; "" if unknown
}

// splitAnnot returns the bare URL of an annotated string and its
// annotations. Unknown annotations are ignored (a later version's).
func splitAnnot(s string) (string, annot) {
	var a annot
	i := strings.IndexByte(s, '#')
	if i < 0 {
		return s, a
	}
	bare, rest := s[:i], s[i:]
	for rest != "" {
		j := strings.IndexByte(rest[1:], '#')
		tok := rest
		if j >= 0 {
			tok, rest = rest[:j+1], rest[j+1:]
		} else {
			rest = ""
		}
		switch {
		case strings.HasPrefix(tok, markSitemap):
			a.sm, a.smHops = sitemapMark(tok)
		case strings.HasPrefix(tok, annotHops):
			if h := tok[len(annotHops):]; validHops(h) {
				a.hops = h
			}
		case strings.HasPrefix(tok, annotVia):
			a.via = expandVia(bare, tok[len(annotVia):])
		}
	}
	return bare, a
}

// withAnnot is the annotated form of the canonical URL s.
func withAnnot(s string, a annot) string {
	if a.sm == smPage && a.hops == "" && a.via == "" {
		return s
	}
	var buf [256]byte // most annotated URLs fit: one allocation, the result's
	return string(appendAnnot(buf[:0], s, a))
}

// appendAnnot appends withAnnot(s, a) to dst. Built in one buffer rather
// than by string concatenation: it runs for every link routed, and the
// concatenations cost four allocations per link.
func appendAnnot(dst []byte, s string, a annot) []byte {
	dst = append(dst, s...)
	if a.sm != smPage {
		dst = appendSitemapMark(dst, a.sm, a.smHops)
	}
	if a.hops != "" {
		dst = append(append(dst, annotHops...), a.hops...)
	}
	if a.via != "" {
		n := len(dst)
		if dst = appendCompactVia(append(dst, annotVia...), s, a.via); len(dst) > maxAnnotated {
			dst = dst[:n]
		}
	}
	return dst
}

// withSitemapMark is the marked form of the canonical URL s.
func withSitemapMark(s string, level, hops uint8) string {
	return string(appendSitemapMark([]byte(s), level, hops))
}

// appendSitemapMark appends the sitemap mark of level and hops to dst.
func appendSitemapMark(dst []byte, level, hops uint8) []byte {
	if level == smChild {
		dst = append(dst, markSitemapChild...)
	} else {
		dst = append(dst, markSitemap...)
	}
	if hops > 0 {
		dst = append(dst, markHops...)
		dst = append(dst, '0'+min(hops, 9))
	}
	return dst
}

// origin returns the scheme://host[:port] prefix of an absolute URL, or ""
// if it has none.
func origin(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	if j := strings.IndexAny(u[i+3:], "/?#"); j >= 0 {
		return u[:i+3+j]
	}
	return u
}

// compactVia is via as stored beside the bare URL u: when they share more
// than u's origin, the length of the prefix they share, '.', and the rest
// of via ("31.b/index.html"); else whole. Links mostly point into the
// same site, often the same directory.
func compactVia(u, via string) string { return string(appendCompactVia(nil, u, via)) }

// appendCompactVia appends compactVia(u, via) to dst.
func appendCompactVia(dst []byte, u, via string) []byte {
	o := origin(u)
	n := 0
	for n < len(u) && n < len(via) && u[n] == via[n] {
		n++
	}
	if o == "" || n <= len(o) {
		return append(dst, via...)
	}
	return append(append(strconv.AppendInt(dst, int64(n), 10), '.'), via[n:]...)
}

// expandVia undoes compactVia for the bare URL u ("" if v is not a valid
// compact via of u).
func expandVia(u, v string) string {
	i := strings.IndexByte(v, '.')
	if v == "" || v[0] < '0' || v[0] > '9' || i < 0 {
		return v
	}
	n, err := strconv.Atoi(v[:i])
	if err != nil || n > len(u) || v[0] == '0' {
		return ""
	}
	return u[:n] + v[i+1:]
}

// urlFP is the DUE fingerprint of a URL as the DUE and frontier hold it:
// that of the URL without its sitemap mark and annotations.
func urlFP(s string) uint64 {
	bare, _ := splitAnnot(s)
	return fingerprint.URL(bare)
}

// splitSitemapMark returns s without its sitemap mark (and annotations),
// its sitemap level and the redirect hops that led to it.
func splitSitemapMark(s string) (string, uint8, uint8) {
	bare, a := splitAnnot(s)
	return bare, a.sm, a.smHops
}

// sitemapMark reads one sitemap mark token ("#sextant-sitemap[-child][-rN]"):
// smPage if it is not one.
func sitemapMark(tok string) (level, hops uint8) {
	if j := len(tok) - len(markHops) - 1; j > 0 && tok[j:j+len(markHops)] == markHops &&
		tok[len(tok)-1] >= '1' && tok[len(tok)-1] <= '9' {
		tok, hops = tok[:j], tok[len(tok)-1]-'0'
	}
	switch tok {
	case markSitemap:
		return smRoot, hops
	case markSitemapChild:
		return smChild, hops
	}
	return smPage, 0
}

// queueKey is what identifies a queued URL for comparisons between stores
// (frontier, DUE, crawl log): the bare URL and its sitemap mark, without
// the via and hop path, which differ with how it was reached.
func queueKey(s string) string {
	bare, a := splitAnnot(s)
	return withAnnot(bare, annot{sm: a.sm, smHops: a.smHops})
}

// receivedDepth is the link depth of an annotated URL received from a peer
// (hostsplit batches carry no depth): the one its hop path implies.
func receivedDepth(s string) uint16 {
	_, a := splitAnnot(s)
	return hopsDepth(a.hops)
}

// annotate returns the i-th link s of the leased page annotated with how
// it was reached; a seed's links (no leased page) are bare.
func (w *worker) annotate(s string, i int) string {
	if w.cur == "" {
		return s
	}
	hop := byte(HopLink)
	if i < len(w.kinds) {
		hop = w.kinds[i]
	}
	w.abuf = appendAnnot(w.abuf[:0], s, annot{hops: w.hopsTo(hop), via: w.cur})
	return string(w.abuf)
}

// hopsTo is extendHops(w.ca.hops, hop), remembered: a page's links share
// its hop path and a few hop kinds, and extending a path allocates.
func (w *worker) hopsTo(hop byte) string {
	for i := range w.hopMemo {
		m := &w.hopMemo[i]
		if m.hop == hop && m.from == w.ca.hops {
			return m.hops
		}
	}
	m := &w.hopMemo[w.hopNext%len(w.hopMemo)]
	w.hopNext++
	m.hop, m.from, m.hops = hop, w.ca.hops, extendHops(w.ca.hops, hop)
	return m.hops
}
