package crawl

import (
	"math"
	"strconv"
	"strings"
)

// Hop letters of a hop path, Heritrix's: how each URL on the path from the
// seed was reached from the one before.
const (
	HopLink     = 'L' // a link (<a href>, <area>, a sitemap-less plain link)
	HopRedirect = 'R' // a 3xx Location (or <meta http-equiv=refresh>)
	HopEmbed    = 'E' // an embed: src of img, script, iframe…; <link href>
	HopPrereq   = 'P' // a prerequisite: the host's robots.txt
	HopSitemap  = 'S' // robots.txt → its sitemap, sitemap → a URL it lists
)

// MaxHopsShown is how many hops a hop path keeps, like Heritrix's
// MAX_HOPS_DISPLAYED: a longer path keeps its last MaxHopsShown letters
// after the count of the hops dropped and a '+' ("12+LLLL…").
const MaxHopsShown = 50

// extendHops returns the hop path p extended by one hop.
func extendHops(p string, hop byte) string {
	dropped, letters := splitHops(p)
	letters += string(hop)
	if cut := len(letters) - MaxHopsShown; cut > 0 {
		dropped += cut
		letters = letters[cut:]
	}
	if dropped == 0 {
		return letters
	}
	return strconv.Itoa(dropped) + "+" + letters
}

// splitHops returns the hops a valid path p dropped and its letters.
func splitHops(p string) (dropped int, letters string) {
	if i := strings.IndexByte(p, '+'); i >= 0 {
		dropped, _ = strconv.Atoi(p[:i])
		return dropped, p[i+1:]
	}
	return 0, p
}

// HopCount is the number of hops of a hop path (its length, dropped hops
// included), or -1 if p is not a hop path.
func HopCount(p string) int {
	if !validHops(p) {
		return -1
	}
	d, l := splitHops(p)
	return d + len(l)
}

// validHops reports whether p is a hop path as extendHops writes them:
// up to MaxHopsShown upper-case letters, after "N+" (N > 0, no leading
// zero, at most 9 digits) only if there are exactly MaxHopsShown.
func validHops(p string) bool {
	letters := p
	if i := strings.IndexByte(p, '+'); i >= 0 {
		n := p[:i]
		if len(n) == 0 || len(n) > 9 || n[0] == '0' {
			return false
		}
		for j := 0; j < len(n); j++ {
			if n[j] < '0' || n[j] > '9' {
				return false
			}
		}
		letters = p[i+1:]
		if len(letters) != MaxHopsShown {
			return false
		}
	}
	if len(letters) > MaxHopsShown {
		return false
	}
	for j := 0; j < len(letters); j++ {
		if letters[j] < 'A' || letters[j] > 'Z' {
			return false
		}
	}
	return true
}

// linkHop is the hop letter of an extracted link, from its element and
// attribute (extract.Link's Tag and Attr), as Heritrix's HTML extractor
// tells navigation from embeds.
func linkHop(tag, attr string) byte {
	switch tag {
	case "a", "area", "form":
		return HopLink
	case "meta":
		return HopRedirect // refresh
	case "link", "img", "script", "iframe", "frame", "embed", "object",
		"source", "track", "audio", "video", "input", "picture", "style":
		return HopEmbed
	}
	switch attr {
	case "src", "srcset", "background", "poster", "data":
		return HopEmbed
	}
	return HopLink
}

// hopsDepth is the link depth (Options.MaxDepth) a hop path implies, for
// URLs received from peers, whose batches carry the annotation but not the
// depth: one per hop except prerequisites (a sitemap named by robots.txt
// is one hop from the page whose visit found it, "PS"). Hops dropped from
// a long path count one each.
func hopsDepth(p string) uint16 {
	if !validHops(p) {
		return 0
	}
	dropped, letters := splitHops(p)
	d := dropped + len(letters) - strings.Count(letters, string(rune(HopPrereq)))
	return uint16(min(d, math.MaxUint16))
}
