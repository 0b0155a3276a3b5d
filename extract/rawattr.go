package extract

import "bytes"

// rawAttrs iterates the attributes of a start tag's raw bytes (z.Raw())
// exactly as x/net/html's Tokenizer.readTag splits them, without the two
// copies per attribute that Tokenizer.TagAttr makes. It returns keys as
// written (not lower-cased) and values without entity decoding or newline
// conversion, so it may only be used for tags that plainTag accepts, and
// values need unescapeAmp; FuzzRawAttrs checks this against TagAttr.
// Duplicate keys are returned too; the caller keeps the first.
type rawAttrs struct {
	b []byte
	i int
}

// plainTag reports whether raw needs none of TagAttr's decoding but for
// "&amp;" (the only character reference common in URLs; see unescapeAmp):
// no other '&', no '\r', no NUL.
func plainTag(raw []byte) bool {
	if bytes.IndexByte(raw, '\r') >= 0 || bytes.IndexByte(raw, 0) >= 0 {
		return false
	}
	for i := 0; ; {
		j := bytes.IndexByte(raw[i:], '&')
		if j < 0 {
			return true
		}
		i += j
		if !bytes.HasPrefix(raw[i:], amp) {
			return false
		}
		i += len(amp)
	}
}

var amp = []byte("&amp;")

// unescapeAmp appends v to dst with every "&amp;" replaced by "&" — all
// the decoding a value of a plainTag needs.
func unescapeAmp(dst, v []byte) []byte {
	for {
		i := bytes.Index(v, amp)
		if i < 0 {
			return append(dst, v...)
		}
		dst = append(dst, v[:i+1]...)
		v = v[i+len(amp):]
	}
}

func newRawAttrs(raw []byte) rawAttrs {
	// readTagName: the byte after '<' is the name's first; the name ends
	// at whitespace (consumed) or before '/' or '>'.
	i := 2
	for i < len(raw) {
		c := raw[i]
		i++
		if isWS(c) {
			break
		}
		if c == '/' || c == '>' {
			i--
			break
		}
	}
	r := rawAttrs{b: raw, i: i}
	r.skipWS()
	return r
}

func (r *rawAttrs) skipWS() {
	for r.i < len(r.b) && isWS(r.b[r.i]) {
		r.i++
	}
}

// next returns the next attribute with a non-empty key; ok is false at the
// end of the tag.
func (r *rawAttrs) next() (key, val []byte, ok bool) {
	for {
		if r.i >= len(r.b) || r.b[r.i] == '>' {
			return nil, nil, false
		}
		key = r.key()
		val = r.val()
		r.skipWS()
		if len(key) > 0 {
			return key, val, true
		}
	}
}

// key mirrors readTagAttrKey.
func (r *rawAttrs) key() []byte {
	b, start := r.b, r.i
	for r.i < len(b) {
		c := b[r.i]
		r.i++
		switch c {
		case '=':
			if start+1 == r.i {
				continue // '=' first: part of the name
			}
			r.i--
			return b[start:r.i]
		case ' ', '\n', '\r', '\t', '\f', '/', '>':
			r.i--
			return b[start:r.i]
		}
	}
	return b[start:r.i]
}

// val mirrors readTagAttrVal.
func (r *rawAttrs) val() []byte {
	b := r.b
	r.skipWS()
	if r.i >= len(b) {
		return nil
	}
	c := b[r.i]
	r.i++
	if c == '/' {
		return nil
	}
	if c != '=' {
		r.i--
		return nil
	}
	r.skipWS()
	if r.i >= len(b) {
		return nil
	}
	q := b[r.i]
	r.i++
	switch q {
	case '>':
		r.i--
		return nil
	case '\'', '"':
		start := r.i
		for r.i < len(b) {
			c := b[r.i]
			r.i++
			if c == q {
				return b[start : r.i-1]
			}
		}
		return b[start:r.i]
	default:
		start := r.i - 1
		for r.i < len(b) {
			c := b[r.i]
			r.i++
			switch c {
			case ' ', '\n', '\r', '\t', '\f':
				return b[start : r.i-1]
			case '>':
				r.i--
				return b[start:r.i]
			}
		}
		return b[start:r.i]
	}
}
