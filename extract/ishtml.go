package extract

import (
	"net/http"
	"strings"
)

// IsHTML reports whether a response should go to the link extractor: true
// iff the media type of contentType (the part before ';', trimmed, ASCII
// case-insensitive) is text/html or application/xhtml+xml, or it is
// application/xml or text/xml and sniff (the body's first bytes) read as
// XML has an XHTML <html> root (namespace http://www.w3.org/1999/xhtml),
// or contentType is empty (or only whitespace) and
// http.DetectContentType(sniff) is text/html. This exact rule is the
// contract with simweb's oracle (whose webs serve no application/xml or
// text/xml pages).
func IsHTML(contentType string, sniff []byte) bool {
	mt := mediaType(contentType)
	if mt == "" {
		if strings.TrimSpace(contentType) != "" {
			return false // parameters but no media type
		}
		return strings.HasPrefix(http.DetectContentType(sniff), "text/html")
	}
	switch kindOf(contentType) {
	case kindXHTML:
		return true
	case kindXML:
		return xhtmlRootIn(sniff)
	}
	return equalFold(mt, "text/html")
}

// mediaType is the part of a Content-Type before ';', trimmed.
func mediaType(contentType string) string {
	mt := contentType
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	return strings.TrimSpace(mt)
}

// equalFold is strings.EqualFold, as simweb's oracle compares.
func equalFold(s, t string) bool { return strings.EqualFold(s, t) }
