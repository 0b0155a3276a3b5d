package extract

import (
	"strings"

	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// maxHeaderCanonical bounds the target of a Link header canonical (bytes,
// before resolution), as MaxAttrLen's default bounds attribute values.
const maxHeaderCanonical = 8 << 10

// HeaderCanonical returns the canonical URL a response's Link header
// values (http.Header.Values("Link")) declare: the target of the first
// link-value whose rel holds "canonical" (RFC 8288 syntax, RFC 6596
// relation), resolved against base and canonicalised like a link; "" if
// there is none, or it does not resolve, or it is a javascript: or data:
// reference. A link-value with an anchor parameter is about another
// resource and is skipped; a malformed value is read up to the error.
func HeaderCanonical(values []string, base *urlnorm.URL) string {
	if base == nil {
		return ""
	}
	for _, v := range values {
		ref, ok := linkHeaderCanonical(v)
		if !ok {
			continue
		}
		if len(ref) > maxHeaderCanonical || neverCrawled(stringBytes(ref)) {
			return ""
		}
		u, err := urlnorm.Resolve(base, ref)
		if err != nil {
			return ""
		}
		return u.String()
	}
	return ""
}

// linkHeaderCanonical scans one Link header value:
//
//	Link       = #link-value
//	link-value = "<" URI-Reference ">" *( OWS ";" OWS link-param )
//	link-param = token BWS [ "=" BWS ( token / quoted-string ) ]
//
// and returns the target of the first link-value with rel=canonical and
// no anchor. Only the first rel parameter of a link-value counts (RFC 8288
// §3.3).
func linkHeaderCanonical(v string) (string, bool) {
	i := 0
	for {
		for i < len(v) && (v[i] == ',' || isWS(v[i])) {
			i++
		}
		if i >= len(v) || v[i] != '<' {
			return "", false
		}
		j := strings.IndexByte(v[i+1:], '>')
		if j < 0 {
			return "", false
		}
		target := v[i+1 : i+1+j]
		i += j + 2
		var rel string
		relSeen, anchor := false, false
		for {
			i = skipWSString(v, i)
			if i >= len(v) || v[i] == ',' {
				break
			}
			if v[i] != ';' {
				return "", false
			}
			i = skipWSString(v, i+1)
			k := i
			for i < len(v) && isTokenChar(v[i]) {
				i++
			}
			name := v[k:i]
			i = skipWSString(v, i)
			var val string
			if i < len(v) && v[i] == '=' {
				var ok bool
				if val, i, ok = paramValue(v, skipWSString(v, i+1)); !ok {
					return "", false
				}
			}
			switch {
			case strings.EqualFold(name, "rel") && !relSeen:
				rel, relSeen = val, true
			case strings.EqualFold(name, "anchor"):
				anchor = true
			case name == "":
				return "", false
			}
		}
		if _, canonical := relWords(stringBytes(rel)); canonical && !anchor {
			return strings.TrimSpace(target), true
		}
	}
}

// paramValue reads a token or a quoted-string (backslash escapes undone)
// at v[i:]; ok is false for an unterminated quoted-string.
func paramValue(v string, i int) (val string, next int, ok bool) {
	if i < len(v) && v[i] == '"' {
		var b strings.Builder
		plain := true
		start := i + 1
		for i++; i < len(v); i++ {
			switch v[i] {
			case '"':
				if plain {
					return v[start:i], i + 1, true
				}
				return b.String(), i + 1, true
			case '\\':
				if plain {
					b.WriteString(v[start:i])
					plain = false
				}
				if i+1 < len(v) {
					i++
					b.WriteByte(v[i])
				}
			default:
				if !plain {
					b.WriteByte(v[i])
				}
			}
		}
		return "", i, false
	}
	k := i
	for i < len(v) && v[i] != ';' && v[i] != ',' && !isWS(v[i]) {
		i++
	}
	return v[k:i], i, true
}

func skipWSString(v string, i int) int {
	for i < len(v) && isWS(v[i]) {
		i++
	}
	return i
}

// isTokenChar reports an RFC 9110 tchar.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
