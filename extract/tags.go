package extract

import (
	"bytes"

	"golang.org/x/net/html"

	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// tagOf returns the canonical name of a tag we take links from, given the
// raw start tag ("<IMG src=..."), or "" for any other tag. Reading the
// name from Raw avoids TagName's per-call copy.
func tagOf(raw []byte) string {
	if len(raw) < 2 {
		return ""
	}
	n := raw[1:]
	i := 0
	for i < len(n) && i < 9 && n[i] != ' ' && n[i] != '\t' && n[i] != '\n' && n[i] != '\r' && n[i] != '\f' && n[i] != '/' && n[i] != '>' {
		i++
	}
	return linkTag(n[:i])
}

// linkTag returns the canonical name of a tag we take links from, or "".
func linkTag(name []byte) string {
	for _, t := range linkTags {
		if asciiEqualFold(name, t) {
			return t
		}
	}
	return ""
}

var linkTags = [...]string{"a", "img", "link", "script", "source", "area", "iframe", "frame",
	"embed", "audio", "video", "track", "form", "meta", "object", "base", "noscript"}

// asciiEqualFold reports whether b equals lower (which is lower-case ASCII)
// ignoring ASCII case.
func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// tagState collects what one start tag's attributes say. The values are
// views of the tokenizer's buffer (or of e.ubuf), valid until the next
// token.
type tagState struct {
	seen             uint16 // attribute kinds already handled (first one wins)
	httpEquivRefresh bool
	content          []byte // <meta content>
	name             []byte // <meta name>
	rel              []byte // rel of a, area, form, link
	ref              []byte // href or action of a, area, form, link: emitted once rel is known
	refAttr          string
}

// tag handles one start tag of interest. Tags whose raw bytes need no
// decoding are split by rawAttrs (no copies); others by TagAttr.
func (e *Extractor) tag(z *html.Tokenizer, tag string) error {
	var st tagState
	if raw := z.Raw(); !e.slowAttrs && plainTag(raw) {
		it := newRawAttrs(raw)
		e.ubuf = e.ubuf[:0] // values decoded for this tag; only appended to
		for {
			k, v, ok := it.next()
			if !ok {
				break
			}
			if bytes.IndexByte(v, '&') >= 0 {
				n := len(e.ubuf)
				e.ubuf = unescapeAmp(e.ubuf, v)
				v = e.ubuf[n:]
			}
			if err := e.attr(&st, tag, k, v); err != nil {
				return err
			}
		}
	} else {
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			if k == nil {
				break
			}
			if err := e.attr(&st, tag, k, v); err != nil {
				return err
			}
		}
	}
	return e.endTag(tag, &st)
}

// endTag emits what a tag says once all its attributes are seen (rel may
// follow href): the URL of a <meta http-equiv=refresh>, a robots <meta>'s
// directives, and the href (or action) of a, area, form and link elements
// with what their rel says (nofollow, canonical).
func (e *Extractor) endTag(tag string, st *tagState) error {
	if tag == "meta" {
		return e.metaTag(st)
	}
	if st.refAttr == "" {
		return nil
	}
	if len(st.ref) > e.opts.MaxAttrLen {
		e.res.TooLong++
		return nil
	}
	nofollow, canonical := relWords(st.rel)
	if canonical && tag == "link" && e.res.Canonical == "" && !neverCrawled(st.ref) {
		var err error
		if e.buf, err = urlnorm.AppendResolved(e.buf[:0], e.base, bytesView(st.ref)); err == nil {
			e.res.Canonical = string(e.buf)
		}
	}
	if nofollow && tag != "link" && !e.opts.FollowNoFollow {
		e.skipNoFollow(st.ref)
		return nil
	}
	return e.emit(st.ref, tag, st.refAttr)
}

// metaTag handles a <meta> once its attributes are seen.
func (e *Extractor) metaTag(st *tagState) error {
	if st.content == nil {
		return nil
	}
	if name := bytes.TrimSpace(st.name); asciiEqualFold(name, "robots") || e.token != "" && asciiEqualFold(name, e.token) {
		e.res.Robots |= directiveWords(st.content)
	}
	if st.httpEquivRefresh {
		if len(st.content) > e.opts.MaxAttrLen {
			e.res.TooLong++
			return nil
		}
		if u, ok := refreshURL(st.content); ok {
			return e.emit(u, "meta", "content")
		}
	}
	return nil
}

// attr handles one attribute of a tag of interest.
func (e *Extractor) attr(st *tagState, tag string, k, v []byte) error {
	attr, bit := attrOf(tag, k)
	if attr == "" || st.seen&bit != 0 {
		return nil // not a link attribute, or a duplicate (the first wins)
	}
	st.seen |= bit
	switch attr {
	case "http-equiv":
		v = bytes.TrimSpace(v)
		st.httpEquivRefresh = asciiEqualFold(v, "refresh")
		return nil
	case "content":
		st.content = v
		return nil
	case "name":
		st.name = v
		return nil
	case "rel":
		st.rel = v
		return nil
	}
	if tag != "base" && (attr == "href" || attr == "action") {
		st.ref, st.refAttr = v, attr // emitted by endTag, once rel is known
		return nil
	}
	if len(v) > e.opts.MaxAttrLen {
		e.res.TooLong++
		return nil
	}
	if tag == "base" {
		e.setBase(v)
		return nil
	}
	if attr == "srcset" {
		return eachSrcset(v, func(u []byte) error { return e.emit(u, tag, attr) })
	}
	return e.emit(v, tag, attr)
}

// Attribute kinds, as bits for tagState.seen.
const (
	bitHref = 1 << iota
	bitSrc
	bitSrcset
	bitAction
	bitData
	bitHTTPEquiv
	bitContent
	bitName
	bitRel
)

// attrOf returns the attribute's canonical name and kind bit if (tag, k)
// carries a link (or is needed to find one), else "". k is compared
// ASCII case-insensitively.
func attrOf(tag string, k []byte) (string, uint16) {
	if len(k) > len("http-equiv") {
		return "", 0
	}
	var buf [10]byte
	for i, c := range k {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	key := buf[:len(k)]
	switch tag {
	case "a", "area", "link":
		switch string(key) {
		case "href":
			return "href", bitHref
		case "rel":
			return "rel", bitRel
		}
	case "base":
		if string(key) == "href" {
			return "href", bitHref
		}
	case "img", "source":
		switch string(key) {
		case "src":
			return "src", bitSrc
		case "srcset":
			return "srcset", bitSrcset
		}
	case "script", "iframe", "frame", "embed", "audio", "video", "track":
		if string(key) == "src" {
			return "src", bitSrc
		}
	case "form":
		switch string(key) {
		case "action":
			return "action", bitAction
		case "rel":
			return "rel", bitRel
		}
	case "object":
		if string(key) == "data" {
			return "data", bitData
		}
	case "meta":
		switch string(key) {
		case "http-equiv":
			return "http-equiv", bitHTTPEquiv
		case "content":
			return "content", bitContent
		case "name":
			return "name", bitName
		}
	}
	return "", 0
}
