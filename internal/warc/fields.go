package warc

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadField reports a header field the Writer refuses to write: one it
// could not write so that the Reader reads the same field back.
var ErrBadField = errors.New("warc: invalid header field")

// checkField reports why name: value cannot be written as a WARC header
// line: the name must be a token (ISO 28500 §5.2, as RFC 9110's field
// names) or it would not read back (an empty name wrote ": ", which no
// reader takes); the value must hold no CR or LF (either would end the line
// and let the value inject fields) and no white space at either end (the
// reader trims it).
func checkField(name, value string) error {
	if !isToken(name) {
		return fmt.Errorf("%w: name %q is not a token", ErrBadField, name)
	}
	if strings.ContainsAny(value, "\r\n") {
		return fmt.Errorf("%w: %s value %.60q holds CR or LF", ErrBadField, name, value)
	}
	if strings.TrimSpace(value) != value {
		return fmt.Errorf("%w: %s value %.60q has white space at an end", ErrBadField, name, value)
	}
	return nil
}

// isToken reports whether s is an RFC 9110 token: one or more of the
// visible ASCII characters other than the separators "(),/:;<=>?@[\]{}.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}
