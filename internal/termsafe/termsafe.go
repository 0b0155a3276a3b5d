// Package termsafe escapes strings from untrusted input (seed files, URLs,
// strings a web server or a peer sent) before they are written to a
// terminal. A terminal obeys control sequences: an ESC (or a raw 8-bit CSI,
// 0x9b) in a URL or a header could clear the screen, retitle the window,
// rewrite earlier lines or, on some terminals, inject input. Bidirectional
// overrides could make a line read differently from what it holds.
//
// Escapes follow strconv.Quote's spelling (\x1b, \u202e, \xff for a byte
// that is not UTF-8) without the surrounding quotes, so ordinary text is
// left as it is. The functions are pure and safe for concurrent use.
package termsafe

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// String returns s with every character that is not printable escaped:
// C0 and C1 controls (newline and tab included), DEL, format characters
// such as bidirectional overrides, and bytes that are not UTF-8. Use it for
// one-line output: a progress line, a log line, a table cell.
func String(s string) string { return escape(s, false) }

// Text is String but keeps newlines and tabs, for multi-line messages
// (errors.Join's output).
func Text(s string) string { return escape(s, true) }

// Printable reports whether String(s) == s: s holds only printable
// characters and spaces.
func Printable(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, n) {
			return false
		}
		i += n
	}
	return true
}

func needsEscape(r rune, size int) bool {
	if r == utf8.RuneError && size == 1 {
		return true
	}
	return r != ' ' && !unicode.IsPrint(r)
}

func escape(s string, keepLines bool) string {
	if Printable(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case keepLines && (r == '\n' || r == '\t'):
			b = append(b, byte(r))
		case r == utf8.RuneError && n == 1:
			b = append(b, `\x`...)
			b = append(b, hex[s[i]>>4], hex[s[i]&15])
		case needsEscape(r, n):
			q := strconv.AppendQuoteRuneToASCII(nil, r) // 'x1b' with quotes
			b = append(b, q[1:len(q)-1]...)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

const hex = "0123456789abcdef"
