package extract

// refreshURL extracts the URL from a <meta http-equiv=refresh> content
// value, following the HTML standard's "shared declarative refresh steps":
// "5; url='/next'", "0;URL=/x", "3, /y", "0; 'q.html'". ok is false if the
// value is malformed or names no URL (a plain reload).
func refreshURL(v []byte) (url []byte, ok bool) {
	i := skipWS(v, 0)
	start := i
	for i < len(v) && isDigit(v[i]) {
		i++
	}
	if i == start && (i >= len(v) || v[i] != '.') {
		return nil, false
	}
	for i < len(v) && (isDigit(v[i]) || v[i] == '.') {
		i++
	}
	if i >= len(v) {
		return nil, false // reload only
	}
	if c := v[i]; c != ';' && c != ',' && !isWS(c) {
		return nil, false
	}
	i = skipWS(v, i)
	if i < len(v) && (v[i] == ';' || v[i] == ',') {
		i = skipWS(v, i+1)
	}
	if i >= len(v) {
		return nil, false
	}
	urlStart := i // "Let urlString be the substring from position to the end."
	if v[i] == 'u' || v[i] == 'U' {
		i++
		if i < len(v) && (v[i] == 'r' || v[i] == 'R') {
			i++
			if i < len(v) && (v[i] == 'l' || v[i] == 'L') {
				i++
				i = skipWS(v, i)
				if i < len(v) && v[i] == '=' {
					i = skipWS(v, i+1)
					return skipQuotes(v, i)
				}
			}
		}
		return found(v[urlStart:]) // "jump to the step labelled parse"
	}
	return skipQuotes(v, i)
}

// skipQuotes implements the "skip quotes" step: an optional opening quote,
// and the URL ends at the matching quote if there is one.
func skipQuotes(v []byte, i int) ([]byte, bool) {
	if i < len(v) && (v[i] == '\'' || v[i] == '"') {
		q := v[i]
		i++
		for j := i; j < len(v); j++ {
			if v[j] == q {
				return found(v[i:j])
			}
		}
	}
	return found(v[i:])
}

// found returns u, ok. An empty URL ("0; url=") refers to the document
// itself, as in a browser; the per-page dedup drops it if already seen.
// Surrounding whitespace is left for the URL parser, which trims it.
func found(u []byte) ([]byte, bool) { return u, true }

func skipWS(v []byte, i int) int {
	for i < len(v) && isWS(v[i]) {
		i++
	}
	return i
}

// isWS: ASCII whitespace per the HTML standard.
func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
