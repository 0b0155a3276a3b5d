package extract

import (
	"bytes"
	"encoding/xml"
	"strings"
	"unicode/utf8"
)

// Skipping text on the XML path. encoding/xml reads character data byte by
// byte through xmlSource and builds a CharData token that extractXML then
// ignores: on a text-heavy page most of the XML path's time. At a token
// boundary, xmlSource instead finds the next '<' in the buffered bytes
// (bytes.IndexByte) and discards the text before it, after checking that
// the decoder would have read it as character data without error (the
// rules of encoding/xml's Decoder.text: no "]]>", valid UTF-8, only XML
// characters, also after replacing character and entity references). Text
// that fails the check, or that the buffer does not show in full, is left
// to the decoder, so the decoder sees the same markup in the same order and
// the links, the limits (MaxTokenBytes counts skipped bytes as the decoder's
// reads would) and the hand-over to the HTML tokenizer at an error (xmlSource
// keeps the same token bytes) are unchanged; FuzzXHTMLSkip compares both.
//
// Text may not be skipped right after the start tag of an element the
// decoder closes by itself (HTML's void elements, xml.HTMLAutoClose): there
// a text token closes the element, and <br>text</br> is not <br></br>.

// atTokenStart is called by boundary: the decoder has consumed exactly the
// bytes of the token it returned, and its next read starts a new token.
func (s *xmlSource) atTokenStart(tok xml.Token) {
	s.skip = !s.noSkip
	if t, ok := tok.(xml.StartElement); ok && autoCloses(t.Name.Local) {
		s.skip = false
	}
}

func autoCloses(local string) bool {
	for _, n := range xml.HTMLAutoClose {
		if strings.EqualFold(n, local) {
			return true
		}
	}
	return false
}

// skipText discards the text at the reader's position that the decoder
// would read as character data without error. Only bytes already buffered
// are looked at (a read happens only when the buffer is empty, as the
// decoder's own next read would), so the underlying reader sees the same
// reads. A text run longer than the buffer is skipped in clean pieces,
// which are kept in s.tok as the decoder's reads would have kept them; a
// whole run, ended by '<', completes a token and leaves s.tok empty.
func (s *xmlSource) skipText() error {
	for {
		if s.br.Buffered() == 0 {
			if _, err := s.br.Peek(1); err != nil {
				s.tok = s.tok[:0] // text at the end is a whole token
				return err
			}
		}
		buf, _ := s.br.Peek(s.br.Buffered())
		end := bytes.IndexByte(buf, '<')
		if end == 0 {
			return nil
		}
		if end > 0 { // the whole run is buffered; '<' ends a reference too
			if cleanText(buf[:end+1]) == end+1 && len(s.tok)+end < s.max {
				s.tok = s.tok[:0]
				_, _ = s.br.Discard(end)
			}
			return nil
		}
		n := cleanText(buf)
		if n == 0 || len(s.tok)+n >= s.max {
			return nil
		}
		s.tok = append(s.tok, buf[:n]...)
		_, _ = s.br.Discard(n)
		if n < len(buf) {
			return nil // an error or a reference or rune cut by the buffer's end
		}
	}
}

// cleanText returns the length of the longest prefix of p, text up to but
// not including the next '<' (or the end of the buffered bytes), that the
// decoder reads as character data without error and after which it reads
// the rest as it would have from the start: not inside a rune or a
// reference, and not after ']' (which could begin "]]>").
func cleanText(p []byte) int {
	clean := 0
	for i := 0; i < len(p); {
		switch c := p[i]; {
		case c >= 0x20 && c < utf8.RuneSelf && c != '&' && c != '>':
			i++
		case c == '>':
			if i >= 2 && p[i-1] == ']' && p[i-2] == ']' {
				return clean
			}
			i++
		case c == '&':
			n, ok := refLen(p[i:])
			if !ok {
				return clean
			}
			i += n
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(p[i:])
			if r == utf8.RuneError && n == 1 || !isXMLChar(r) {
				return clean
			}
			i += n
		case c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			return clean
		}
		if p[i-1] != ']' {
			clean = i
		}
	}
	return clean
}

// refLen returns how many bytes the decoder consumes for the reference
// starting at p[0] == '&' (the byte that ends an unterminated one is read
// again as text), and false if p ends before the reference does or if
// what it is replaced by is not allowed in character data.
func refLen(p []byte) (int, bool) {
	i := 1
	if i == len(p) {
		return 0, false
	}
	if p[i] != '#' {
		j := i
		for j < len(p) && (p[j] >= utf8.RuneSelf || isNameByte(p[j])) {
			j++
		}
		if j == len(p) {
			return 0, false
		}
		if p[j] != ';' {
			return j, true
		}
		// Named references the decoder knows are checked whether or not
		// the name is one it replaces: a superset is safe.
		if text, ok := xml.HTMLEntity[string(p[i:j])]; ok && !validXMLText(text) {
			return 0, false
		}
		return j + 1, true
	}
	i++
	if i == len(p) {
		return 0, false
	}
	base := rune(10)
	if p[i] == 'x' {
		base = 16
		if i++; i == len(p) {
			return 0, false
		}
	}
	start, v := i, rune(0)
	for ; i < len(p); i++ {
		d := digitVal(p[i], base)
		if d < 0 {
			break
		}
		if v <= utf8.MaxRune {
			v = v*base + d
		}
	}
	if i == len(p) {
		return 0, false
	}
	if p[i] != ';' {
		return i, true
	}
	if i > start && v <= utf8.MaxRune && !validXMLText(string(v)) {
		return 0, false
	}
	return i + 1, true
}

func digitVal(c byte, base rune) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case base == 16 && 'a' <= c && c <= 'f':
		return rune(c-'a') + 10
	case base == 16 && 'A' <= c && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

func isNameByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '_' || c == ':' || c == '.' || c == '-'
}

func validXMLText(s string) bool {
	for _, r := range s {
		if !isXMLChar(r) { // an invalid byte is U+FFFD here: check it apart
			return false
		}
	}
	return utf8.ValidString(s)
}

// isXMLChar is XML's Char production, as encoding/xml checks it.
func isXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
