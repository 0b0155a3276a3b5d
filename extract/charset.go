package extract

import (
	"bufio"
	"errors"
	"io"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/transform"
)

// charsetReader turns a document into UTF-8, reusing its buffers.
type charsetReader struct {
	br    *bufio.Reader
	probe [1024]byte
}

// init wraps r so that it yields UTF-8, and returns the source encoding's
// name. Only a failed read of the first 1024 bytes is an error. An XML
// document's declaration (<?xml encoding=...?>) counts after the BOM and
// the Content-Type, as XML says; an HTML one's does not, as HTML says.
func (c *charsetReader) init(r io.Reader, contentType string, xml bool) (io.Reader, string, error) {
	if c.br == nil {
		c.br = bufio.NewReaderSize(r, 4096)
	} else {
		c.br.Reset(r)
	}
	prefix, err := c.br.Peek(1024)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, "", err
	}
	enc, name := c.detect(prefix, contentType, xml)
	if enc == nil {
		return c.br, name, nil
	}
	return transform.NewReader(c.br, enc.NewDecoder()), name, nil
}

// detect returns the document's encoding (nil for UTF-8) and its name.
// Precedence as in the HTML standard's sniffing: BOM, Content-Type charset,
// <meta> in the first 1024 bytes. When nothing is declared, UTF-8 if the
// prefix is ASCII or valid UTF-8, else windows-1252. With xml, the XML
// declaration's encoding comes before the <meta>.
func (c *charsetReader) detect(prefix []byte, contentType string, xml bool) (encoding.Encoding, string) {
	e, name, certain := charset.DetermineEncoding(prefix, contentType)
	if xml && !certain {
		if label := xmlDeclEncoding(prefix); label != "" {
			if e2, name2 := charset.Lookup(label); e2 != nil {
				if name2 == "utf-8" {
					return nil, name2
				}
				return e2, name2
			}
		}
	}
	if !certain && name == "windows-1252" && !hasHighBit(prefix) {
		// DetermineEncoding also answers windows-1252 when nothing is
		// declared and the prefix is pure ASCII; we then prefer UTF-8
		// (most of today's web), but a <meta charset=windows-1252> must
		// still win. Ask again with a UTF-8 sequence appended: without a
		// declaration the answer becomes utf-8. (The trailing space keeps
		// the "partial rune at the end" trimming off our é.)
		n := copy(c.probe[:len(c.probe)-3], prefix)
		n += copy(c.probe[n:], "\u00e9 ")
		if _, name2, _ := charset.DetermineEncoding(c.probe[:n], ""); name2 == "utf-8" {
			return nil, "utf-8"
		}
	}
	if name == "utf-8" {
		return nil, name
	}
	return e, name
}

func hasHighBit(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}
