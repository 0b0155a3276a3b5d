package extract

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// xhtmlNS is the XHTML namespace.
const xhtmlNS = "http://www.w3.org/1999/xhtml"

// docKind is how Extract reads a document, by its Content-Type.
type docKind uint8

const (
	kindHTML  docKind = iota // HTML tokenizer
	kindXHTML                // application/xhtml+xml: XML, any root
	kindXML                  // application/xml, text/xml: XML, links only under an XHTML <html> root
)

func kindOf(contentType string) docKind {
	switch mt := mediaType(contentType); {
	case equalFold(mt, "application/xhtml+xml"):
		return kindXHTML
	case equalFold(mt, "application/xml"), equalFold(mt, "text/xml"):
		return kindXML
	}
	return kindHTML
}

// maxXMLDepth bounds element nesting on the XML path: encoding/xml keeps a
// stack entry (~100 B) per open element, so 16 MiB of "<a>" would cost
// ~0.5 GB. Deeper documents continue with the HTML tokenizer, which keeps
// no stack.
const maxXMLDepth = 1024

// errTokenTooBig is what xmlSource reports once a token exceeds
// MaxTokenBytes; the decoder passes it up.
var errTokenTooBig = errors.New("extract: xml token too big")

// extractXML finds the links of an XHTML document read as XML, as a
// browser does for these media types: with HTML rules a self-closing
// <script src="s.js"/> would swallow the rest of the page as script text.
// encoding/xml runs non-strict with HTML's entities (&nbsp;) and void
// elements (<br>, <img>, <meta> unclosed), so common real-world XHTML
// parses. The link rules are the HTML path's (attrOf, setBase, endTag);
// elements match by local name in any namespace (as the HTML tokenizer
// matches tags inside inline SVG), attributes only without a namespace
// (xlink:href is not href there either), and the contents of script,
// style, textarea and title are skipped (text to the HTML tokenizer).
//
// Malformed XML: at a syntax error (or past maxXMLDepth) the HTML tokenizer
// takes over at the start of the token that failed, fed the bytes of that
// token and the rest of the stream. So the links before the error are found
// by the XML parser, once, and the failing tag and everything after it by
// the HTML rules, with no second read of the body and the base and the
// per-document dedup carried over. (Restarting the HTML tokenizer from the
// start was the alternative: it needs the body twice and would lose, again,
// the links after any self-closing <script/> before the error.) A document
// served as application/xml or text/xml whose root is not an XHTML <html>,
// or that fails before its root, yields nothing.
func (e *Extractor) extractXML(r io.Reader, kind docKind) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		if e.xbr == nil {
			e.xbr = bufio.NewReaderSize(r, 4096)
		} else {
			e.xbr.Reset(r)
		}
		br = e.xbr
	}
	src := &e.xsrc
	src.reset(br)
	src.max = e.opts.MaxTokenBytes
	src.noSkip = e.decodeText
	src.skip = !src.noSkip
	d := newXMLDecoder(src)
	depth, skipFrom, root := 0, 0, false
	for {
		tok, err := d.Token()
		if err != nil {
			switch {
			case src.tooBig:
				e.res.Truncated = TruncatedToken
				return nil
			case src.err != nil:
				return fmt.Errorf("extract: reading document: %w", src.err)
			case err == io.EOF, kind == kindXML && !root:
				return nil
			}
			return e.tokenize(io.MultiReader(bytes.NewReader(src.tok), br), 0)
		}
		src.boundary(d.InputOffset(), tok)
		switch t := tok.(type) {
		case xml.StartElement:
			if !root {
				root = true
				if kind == kindXML && !isXHTMLRoot(t.Name) {
					return nil
				}
			}
			depth++
			if skipFrom == 0 {
				if err := e.xmlTag(t); err != nil {
					if err == errStop {
						e.res.Truncated = TruncatedLinks
						return nil
					}
					return err
				}
				if isRawText(t.Name.Local) {
					skipFrom = depth
				}
			}
			if depth > maxXMLDepth {
				return e.tokenize(io.MultiReader(bytes.NewReader(src.tok), br), 0)
			}
		case xml.EndElement:
			if depth == skipFrom {
				skipFrom = 0
			}
			depth--
		}
	}
}

// xmlTag handles one start element through the HTML path's rules.
func (e *Extractor) xmlTag(t xml.StartElement) error {
	tag := linkTag(stringBytes(t.Name.Local))
	if tag == "" || tag == "noscript" { // noscript's content is markup here
		return nil
	}
	var st tagState
	for _, a := range t.Attr {
		if a.Name.Space != "" {
			continue
		}
		// attr only reads its arguments (st.content until endTag, while
		// the strings are alive): read-only views are safe.
		if err := e.attr(&st, tag, stringBytes(a.Name.Local), stringBytes(a.Value)); err != nil {
			return err
		}
	}
	return e.endTag(tag, &st)
}

func newXMLDecoder(r io.Reader) *xml.Decoder {
	d := xml.NewDecoder(r)
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	// The document reaches the decoder as UTF-8 already (charsetReader
	// honours the declaration), so any declared encoding is a no-op.
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	return d
}

func isXHTMLRoot(n xml.Name) bool { return n.Space == xhtmlNS && n.Local == "html" }

// isRawText reports the elements whose content the HTML tokenizer reads as
// text, so that links in it are not followed on either path.
func isRawText(local string) bool {
	b := stringBytes(local)
	return asciiEqualFold(b, "script") || asciiEqualFold(b, "style") ||
		asciiEqualFold(b, "textarea") || asciiEqualFold(b, "title")
}

// xhtmlRootIn reports whether the document prefix sniff, read as XML, has
// an XHTML <html> root element (in its first len(sniff) bytes).
func xhtmlRootIn(sniff []byte) bool {
	d := newXMLDecoder(bytes.NewReader(sniff))
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if t, ok := tok.(xml.StartElement); ok {
			return isXHTMLRoot(t.Name)
		}
	}
}

// xmlSource feeds the decoder byte by byte (it then reads nothing ahead
// but one byte it puts back) and keeps the bytes of the token being read,
// so that the HTML tokenizer can take over at that token, and so that a
// token over MaxTokenBytes stops the parse before the decoder buffers it.
type xmlSource struct {
	br     *bufio.Reader
	tok    []byte // bytes read since the last token boundary
	n      int64  // bytes read in all
	max    int
	tooBig bool
	err    error // a read error other than io.EOF
	skip   bool  // the next read starts a token: skip text (xmlskip.go)
	noSkip bool  // the decoder reads all text (Extractor.decodeText)
}

func (s *xmlSource) reset(br *bufio.Reader) {
	tok := s.tok[:0]
	if cap(tok) > 1<<20 {
		tok = nil // do not keep a huge token's buffer for the next document
	}
	*s = xmlSource{br: br, tok: tok, noSkip: s.noSkip}
}

func (s *xmlSource) ReadByte() (byte, error) {
	if len(s.tok) >= s.max {
		s.tooBig = true
		return 0, errTokenTooBig
	}
	if s.skip {
		s.skip = false
		if err := s.skipText(); err != nil {
			if err != io.EOF {
				s.err = err
			}
			return 0, err
		}
	}
	b, err := s.br.ReadByte()
	if err != nil {
		if err != io.EOF {
			s.err = err
		}
		return 0, err
	}
	s.tok = append(s.tok, b)
	s.n++
	return b, nil
}

// Read makes xmlSource an io.Reader; the decoder only calls ReadByte.
func (s *xmlSource) Read(p []byte) (int, error) {
	for i := range p {
		b, err := s.ReadByte()
		if err != nil {
			return i, err
		}
		p[i] = b
	}
	return len(p), nil
}

// boundary marks the end of token t: the decoder has consumed off bytes;
// a byte read beyond them (its look-ahead) begins the next token.
func (s *xmlSource) boundary(off int64, t xml.Token) {
	keep := int(s.n - off)
	if keep < 0 || keep > len(s.tok) {
		keep = 0
	}
	s.tok = s.tok[:copy(s.tok, s.tok[len(s.tok)-keep:])]
	s.skip = false
	if keep == 0 {
		s.atTokenStart(t)
	}
}

// xmlDeclEncoding returns the encoding label of an XML declaration at the
// start of prefix (after a UTF-8 BOM), or "".
func xmlDeclEncoding(prefix []byte) string {
	p := bytes.TrimPrefix(prefix, []byte("\xef\xbb\xbf"))
	if !bytes.HasPrefix(p, []byte("<?xml")) || len(p) < 6 || !isWS(p[5]) {
		return ""
	}
	end := bytes.Index(p, []byte("?>"))
	if end < 0 {
		return ""
	}
	p = p[:end]
	i := bytes.Index(p, []byte("encoding"))
	if i < 0 {
		return ""
	}
	i = skipWS(p, i+len("encoding"))
	if i >= len(p) || p[i] != '=' {
		return ""
	}
	i = skipWS(p, i+1)
	if i >= len(p) || p[i] != '"' && p[i] != '\'' {
		return ""
	}
	q := p[i]
	v := p[i+1:]
	j := bytes.IndexByte(v, q)
	if j < 0 {
		return ""
	}
	return string(v[:j])
}

// stringBytes is a read-only view of s.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
