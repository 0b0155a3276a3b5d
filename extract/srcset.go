package extract

// eachSrcset calls fn with the URL of every image candidate in a srcset
// attribute value, following the HTML standard's "parse a srcset
// attribute": candidates are separated by commas, a URL is a run of
// non-whitespace (so it may contain commas, except trailing ones), and
// descriptors ("1x", "480w", even garbage with parentheses) follow it up
// to the next comma outside parentheses. It stops at fn's first error.
func eachSrcset(v []byte, fn func(url []byte) error) error {
	i := 0
	for {
		for i < len(v) && (isWS(v[i]) || v[i] == ',') {
			i++
		}
		if i >= len(v) {
			return nil
		}
		start := i
		for i < len(v) && !isWS(v[i]) {
			i++
		}
		u := v[start:i]
		if n := len(u); u[n-1] == ',' {
			for n > 0 && u[n-1] == ',' {
				n--
			}
			u = u[:n]
			// No descriptors: the next candidate starts right here.
		} else {
			// Skip descriptors up to a comma outside parentheses.
			depth := 0
		desc:
			for ; i < len(v); i++ {
				switch v[i] {
				case '(':
					depth++
				case ')':
					if depth > 0 {
						depth--
					}
				case ',':
					if depth == 0 {
						i++
						break desc
					}
				}
			}
		}
		if len(u) > 0 {
			if err := fn(u); err != nil {
				return err
			}
		}
	}
}
