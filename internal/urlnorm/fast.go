package urlnorm

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The fast path handles the references that make up nearly all links on
// real pages — ASCII, http/https, a plain DNS host name — and produces
// exactly the string the WHATWG parser would. Anything it is not sure
// about makes it return false, and the caller falls back to the reference
// parser (which may then accept or reject the input). FuzzFastPath checks
// agreement with the reference parser; the WPT test runs both.

// fastResolve appends the canonical form of ref (resolved against base,
// which may be nil) to dst. ok is false if ref is outside the fast path's
// domain; dst is then returned unchanged.
func fastResolve(dst []byte, base *URL, ref string) (out []byte, ok bool) {
	n := len(ref)
	if n == 0 {
		return appendBase(dst, base)
	}
	// Leading/trailing C0-or-space would be trimmed; leave to the parser.
	if ref[0] <= ' ' || ref[n-1] <= ' ' {
		return dst, false
	}
	main := ref
	if i := strings.IndexByte(ref, '#'); i >= 0 {
		main = ref[:i]
		// The fragment is dropped; only make sure the parser would not
		// treat it specially (tab/newline removal, invalid UTF-8).
		for j := i + 1; j < n; j++ {
			if c := ref[j]; c < ' ' || c == 0x7f {
				return dst, false
			}
		}
		if !utf8.ValidString(ref[i+1:]) {
			return dst, false
		}
	}
	// Tabs/newlines (removed), other controls, invalid UTF-8, and
	// backslashes before the query (a '/' in special URLs) go to the
	// reference parser. Valid non-ASCII is percent-encoded as UTF-8 in the
	// path and query (plainHost keeps it out of hosts).
	inQuery, high := false, false
	for j := 0; j < len(main); j++ {
		c := main[j]
		if c < ' ' || c == 0x7f || c == '\\' && !inQuery {
			return dst, false
		}
		high = high || c >= 0x80
		inQuery = inQuery || c == '?'
	}
	if high && !utf8.ValidString(main) {
		return dst, false
	}
	if len(main) == 0 { // "#frag"
		return appendBase(dst, base)
	}
	if k := schemeLen(main); k > 0 {
		var scheme string
		switch {
		case strings.EqualFold(main[:k], "http"):
			scheme = "http"
		case strings.EqualFold(main[:k], "https"):
			scheme = "https"
		default:
			return dst, false
		}
		rest := main[k+1:]
		if !strings.HasPrefix(rest, "//") { // "http:x", "http:/x": relative forms
			return dst, false
		}
		return appendAuthority(dst, scheme, rest[2:])
	}
	if !fastBase(base) {
		return dst, false
	}
	mark := len(dst)
	switch { // relative references: the base supplies the scheme and host
	case strings.HasPrefix(main, "//"):
		return appendAuthority(dst, base.Scheme(), main[2:])
	case main[0] == '/':
		dst = append(dst, base.s[:base.pathStart]...)
		return appendPath(dst, len(dst), main[1:]), true
	case main[0] == '?':
		dst = append(dst, base.s[:base.pathEnd]...)
		return appendQuery(dst, main[1:]), true
	default:
		// Base path minus its last segment, then the reference's segments.
		p := base.Path()
		dst = append(dst, base.s[:int(base.pathStart)+strings.LastIndexByte(p, '/')]...)
		return appendPath(dst, mark+int(base.pathStart), main), true
	}
}

// fastBase reports whether base is an http(s) URL with a host, the only
// bases the fast path resolves against.
func fastBase(base *URL) bool {
	return base != nil && base.hasHost && base.IsHTTP()
}

func appendBase(dst []byte, base *URL) ([]byte, bool) {
	if !fastBase(base) {
		return dst, false
	}
	return append(dst, base.s...), true
}

// schemeLen returns k > 0 if s[:k] is a URL scheme followed by ':' at s[k].
func schemeLen(s string) int {
	if !isAlpha(s[0]) {
		return 0
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ':':
			return i
		case isAlpha(c) || isDigit(c) || c == '+' || c == '-' || c == '.':
		default:
			return 0
		}
	}
	return 0
}

// appendAuthority handles s = "host[:port][/path][?query]" after "scheme://".
func appendAuthority(dst []byte, scheme, s string) ([]byte, bool) {
	orig := len(dst)
	end := strings.IndexAny(s, "/?")
	if end < 0 {
		end = len(s)
	}
	auth := s[:end] // no '\\' here: only the query may contain one
	host, port := auth, ""
	if i := strings.IndexByte(auth, ':'); i >= 0 {
		host, port = auth[:i], auth[i+1:]
	}
	if !plainHost(host) {
		return dst[:orig], false
	}
	dst = append(dst, scheme...)
	dst = append(dst, "://"...)
	for i := 0; i < len(host); i++ {
		c := host[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	if port != "" {
		if len(port) > 9 {
			return dst[:orig], false
		}
		v := 0
		for i := 0; i < len(port); i++ {
			if !isDigit(port[i]) {
				return dst[:orig], false
			}
			v = v*10 + int(port[i]-'0')
		}
		if v > 65535 {
			return dst[:orig], false
		}
		if !(v == 80 && scheme == "http" || v == 443 && scheme == "https") {
			dst = append(dst, ':')
			dst = strconv.AppendInt(dst, int64(v), 10)
		}
	}
	rest := s[end:]
	switch {
	case rest == "":
		return append(dst, '/'), true
	case rest[0] == '?':
		dst = append(dst, '/')
		return appendQuery(dst, rest[1:]), true
	default: // '/'
		return appendPath(dst, len(dst), rest[1:]), true
	}
}

// plainHost accepts only hosts the WHATWG host parser leaves unchanged but
// for ASCII lower-casing: dot-separated LDH labels of 1..63 bytes, no
// leading/trailing hyphen, no "xn--"-like label (punycode is validated),
// total length <= 253, and a last label that does not start with a digit
// (which could make the host an IPv4 address).
func plainHost(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) {
			c := h[i]
			if c == '.' {
				// fall through to the label check below
			} else if isAlpha(c) || isDigit(c) || c == '-' {
				continue
			} else {
				return false
			}
		}
		l := h[start:i]
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' ||
			len(l) >= 4 && l[2] == '-' && l[3] == '-' {
			return false
		}
		if i == len(h) && isDigit(l[0]) {
			return false
		}
		start = i + 1
	}
	return true
}

// appendPath processes the path segments in p (relative text without a
// leading '/', ending at '?' or the end) onto the path held in dst[root:],
// which is empty or "/seg/seg...", following the WHATWG path state for a
// special, non-file URL. Then it appends the query if any.
func appendPath(dst []byte, root int, p string) []byte {
	for {
		end := strings.IndexByte(p, '/')
		q := strings.IndexByte(p, '?')
		sep := byte('/')
		switch {
		case q >= 0 && (end < 0 || q < end):
			end, sep = q, '?'
		case end < 0:
			end, sep = len(p), 0
		}
		seg := p[:end]
		switch {
		case isDoubleDot(seg):
			if len(dst) > root {
				dst = dst[:root+lastSlash(dst[root:])]
			}
			if sep != '/' {
				dst = append(dst, '/')
			}
		case isSingleDot(seg):
			if sep != '/' {
				dst = append(dst, '/')
			}
		default:
			dst = append(dst, '/')
			dst = appendEscaped(dst, seg, &pathEscape)
		}
		switch sep {
		case '/':
			p = p[end+1:]
		case '?':
			return appendQuery(dst, p[end+1:])
		default:
			return dst
		}
	}
}

func lastSlash(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '/' {
			return i
		}
	}
	return 0
}

func appendQuery(dst []byte, q string) []byte {
	dst = append(dst, '?')
	return appendEscaped(dst, q, &queryEscape)
}

func isSingleDot(s string) bool {
	return s == "." || len(s) == 3 && s[0] == '%' && s[1] == '2' && (s[2] == 'e' || s[2] == 'E')
}

func isDoubleDot(s string) bool {
	switch len(s) {
	case 2:
		return s == ".."
	case 4:
		return s[0] == '.' && isSingleDot(s[1:]) || s[3] == '.' && isSingleDot(s[:3])
	case 6:
		return isSingleDot(s[:3]) && isSingleDot(s[3:])
	}
	return false
}

// escapeSet marks the printable ASCII bytes to percent-encode; bytes of
// non-ASCII characters are always encoded, controls never reach the fast
// path.
type escapeSet [128]bool

var (
	// WHATWG path percent-encode set, printable part: space " # < > ? ` { } ^.
	pathEscape = newEscapeSet(" \"#<>?`{}^")
	// WHATWG special-query percent-encode set, printable part: space " # < > '.
	queryEscape = newEscapeSet(" \"#<>'")
)

func newEscapeSet(chars string) escapeSet {
	var s escapeSet
	for i := 0; i < len(chars); i++ {
		s[chars[i]] = true
	}
	return s
}

func appendEscaped(dst []byte, s string, set *escapeSet) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || set[c] {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
