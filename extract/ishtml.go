package extract

import (
	"net/http"
	"strings"
)

// IsHTML reports whether a response should go to the link extractor: true
// iff the media type of contentType (the part before ';', trimmed, ASCII
// case-insensitive) is text/html or application/xhtml+xml, or contentType
// is empty (or only whitespace) and http.DetectContentType(sniff) is
// text/html. This exact rule is the contract with simweb's oracle.
func IsHTML(contentType string, sniff []byte) bool {
	mt := contentType
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = strings.TrimSpace(mt)
	if mt == "" {
		if strings.TrimSpace(contentType) != "" {
			return false // parameters but no media type
		}
		return strings.HasPrefix(http.DetectContentType(sniff), "text/html")
	}
	return strings.EqualFold(mt, "text/html") || strings.EqualFold(mt, "application/xhtml+xml")
}
