package sitemap

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// xml parses a <urlset> or <sitemapindex>. Elements are matched by local
// name whatever their namespace: real sitemaps often get the namespace
// wrong, and nothing else could be meant.
func (p *parser) xml(br *bufio.Reader) error {
	tr := &tokReader{br: br, limit: int64(p.opts.MaxTokenBytes)}
	d := xml.NewDecoder(tr)
	d.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "utf-8", "utf8", "us-ascii", "ascii":
			return in, nil
		}
		return nil, fmt.Errorf("%w: encoding %q (sitemaps are UTF-8)", ErrNotSitemap, label)
	}
	var (
		depth   int
		item    string // "url" or "sitemap"
		inItem  bool
		field   string
		text    []byte
		e       Entry
		textCap = p.opts.MaxURLLength + 1
	)
	for {
		tok, err := d.Token()
		tr.mark = tr.n
		if err == io.EOF {
			if p.res.Kind == KindUnknown {
				return fmt.Errorf("%w: no root element", ErrNotSitemap)
			}
			return nil
		}
		if err != nil {
			if p.fnErr != nil {
				return p.fnErr
			}
			if errors.Is(err, ErrNotSitemap) {
				return err
			}
			if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrTokenTooLarge) {
				return err
			}
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > p.opts.MaxDepth {
				return fmt.Errorf("%w: depth > %d", ErrTooDeep, p.opts.MaxDepth)
			}
			switch {
			case depth == 1:
				switch t.Name.Local {
				case "urlset":
					p.res.Kind, item = KindURLSet, "url"
				case "sitemapindex":
					p.res.Kind, item = KindIndex, "sitemap"
				default:
					return fmt.Errorf("%w: root element <%s>", ErrNotSitemap, t.Name.Local)
				}
			case depth == 2:
				inItem = t.Name.Local == item
				e = Entry{Priority: 0.5}
			case depth == 3 && inItem:
				field, text = t.Name.Local, text[:0]
			}
		case xml.CharData:
			if depth == 3 && inItem && len(text) < textCap {
				if len(text) == 0 {
					t = xml.CharData(strings.TrimLeft(string(t), " \t\r\n"))
				}
				text = append(text, t[:min(len(t), textCap-len(text))]...)
			}
		case xml.EndElement:
			switch {
			case depth == 3 && inItem:
				s := strings.TrimSpace(string(text))
				switch field {
				case "loc":
					e.Loc = s
				case "lastmod":
					e.LastMod = parseLastMod(s)
				case "changefreq":
					e.ChangeFreq = strings.ToLower(s)
				case "priority":
					e.Priority = parsePriority(s)
				}
				field = ""
			case depth == 2 && inItem:
				if err := p.emit(e); err != nil {
					return err
				}
				inItem = false
			}
			depth--
		}
	}
}

// tokReader is the decoder's io.ByteReader (so that it does no buffering
// of its own): it fails once more than limit bytes are read since the
// last token, which bounds what one token (a huge text or attribute, an
// endless tag) can make the decoder hold.
type tokReader struct {
	br             *bufio.Reader
	n, mark, limit int64
}

func (t *tokReader) ReadByte() (byte, error) {
	if t.n-t.mark > t.limit {
		return 0, fmt.Errorf("%w: > %d bytes", ErrTokenTooLarge, t.limit)
	}
	c, err := t.br.ReadByte()
	if err == nil {
		t.n++
	}
	return c, err
}

func (t *tokReader) Read(b []byte) (int, error) {
	for i := range b {
		c, err := t.ReadByte()
		if err != nil {
			return i, err
		}
		b[i] = c
	}
	return len(b), nil
}
