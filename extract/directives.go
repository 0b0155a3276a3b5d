package extract

import (
	"strings"
)

// Directives are the robots directives that apply to a page, from its
// robots <meta> elements (Result.Robots) or its X-Robots-Tag headers
// (HeaderDirectives). Several sources combine by union: the most
// restrictive wins, and "all", "index" and "follow" never lift a
// restriction another source set.
type Directives uint8

// The directives a crawler acts on; others (noarchive, nosnippet,
// max-snippet:N, unavailable_after: DATE, ...) are about an index's
// presentation and are ignored.
const (
	// NoFollow: none of the page's links are to be followed.
	NoFollow Directives = 1 << iota
	// NoIndex: the page is not to be indexed (a crawler without an index
	// records it).
	NoIndex
)

// Has reports whether every directive of x is in d.
func (d Directives) Has(x Directives) bool { return d&x == x }

// String returns the directives as a comma list in a fixed order
// ("noindex,nofollow"), or "" for none; ParseDirectives reads it back.
func (d Directives) String() string {
	switch d & (NoFollow | NoIndex) {
	case NoFollow:
		return "nofollow"
	case NoIndex:
		return "noindex"
	case NoFollow | NoIndex:
		return "noindex,nofollow"
	}
	return ""
}

// ParseDirectives parses the content of a robots <meta> element: words
// separated by commas or white space, ASCII case-insensitive; "none" is
// "noindex, nofollow"; unknown words are ignored.
func ParseDirectives(content string) Directives {
	return directiveWords(stringBytes(content))
}

// directiveWords is ParseDirectives on bytes (no allocation).
func directiveWords(b []byte) Directives {
	var d Directives
	for len(b) > 0 {
		i := 0
		for i < len(b) && (b[i] == ',' || isWS(b[i])) {
			i++
		}
		j := i
		for j < len(b) && b[j] != ',' && !isWS(b[j]) {
			j++
		}
		d |= directiveWord(b[i:j])
		b = b[j:]
	}
	return d
}

func directiveWord(w []byte) Directives {
	switch {
	case asciiEqualFold(w, "nofollow"):
		return NoFollow
	case asciiEqualFold(w, "noindex"):
		return NoIndex
	case asciiEqualFold(w, "none"):
		return NoFollow | NoIndex
	}
	return 0
}

// HeaderDirectives returns the directives of a response's X-Robots-Tag
// header values (http.Header.Values) that apply to the crawler whose
// robots token is token. Each value is a comma list of directives; an item
// "NAME: directives" starts a part that applies only to the user agent
// NAME (ASCII case-insensitive), up to the next such item or the end of
// the value, as Google documents it:
//
//	X-Robots-Tag: noindex                      everyone
//	X-Robots-Tag: otherbot: noindex, nofollow  otherbot only (both)
//	X-Robots-Tag: sextant: nofollow, otherbot: noindex
//
// Directives that take a value after a colon (unavailable_after,
// max-snippet, ...) are not mistaken for an agent.
func HeaderDirectives(values []string, token string) Directives {
	var d Directives
	for _, v := range values {
		d |= headerValue(v, token)
	}
	return d
}

func headerValue(v, token string) Directives {
	var d Directives
	applies := true // no agent named yet: the part is for everyone
	for item := range strings.SplitSeq(v, ",") {
		if i := strings.IndexByte(item, ':'); i > 0 {
			if name := strings.TrimSpace(item[:i]); isProductToken(name) && !valuedDirective(name) {
				applies = token != "" && strings.EqualFold(name, token)
				item = item[i+1:]
			}
		}
		if applies {
			d |= directiveWords(stringBytes(item))
		}
	}
	return d
}

// isProductToken reports a robots.txt-style product token: letters,
// digits, '_' and '-'.
func isProductToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !('a' <= c && c <= 'z' || '0' <= s[i] && s[i] <= '9' || s[i] == '_' || s[i] == '-') {
			return false
		}
	}
	return true
}

// valuedDirective reports the directives written "name: value".
func valuedDirective(name string) bool {
	for _, v := range [...]string{"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"} {
		if strings.EqualFold(name, v) {
			return true
		}
	}
	return false
}

// relWords reports whether a rel attribute (a set of space-separated
// tokens, ASCII case-insensitive) holds "nofollow" and "canonical".
// "ugc" and "sponsored" are not nofollow: they qualify a link, and a
// crawler may follow it.
func relWords(rel []byte) (nofollow, canonical bool) {
	for len(rel) > 0 {
		i := 0
		for i < len(rel) && isWS(rel[i]) {
			i++
		}
		j := i
		for j < len(rel) && !isWS(rel[j]) {
			j++
		}
		w := rel[i:j]
		nofollow = nofollow || asciiEqualFold(w, "nofollow")
		canonical = canonical || asciiEqualFold(w, "canonical")
		rel = rel[j:]
	}
	return nofollow, canonical
}
