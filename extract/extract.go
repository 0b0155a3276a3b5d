package extract

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/net/html"

	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// Errors.
var (
	// ErrNilBase: Extract was called without a document URL.
	ErrNilBase = errors.New("extract: nil base URL")
	// ErrInvalidOptions wraps every problem Options.Validate finds.
	ErrInvalidOptions = errors.New("extract: invalid options")
)

// Link is one URL found in a document.
type Link struct {
	URL  string // canonical (urlnorm) form, fragment removed
	Tag  string // lower-case element name: "a", "img", "meta", ...
	Attr string // attribute it came from: "href", "src", "srcset", "content", ...
}

// Parsed returns the link's URL in parsed form without parsing it again
// (URL is canonical already): urlnorm.Canonical(l.URL).
func (l Link) Parsed() *urlnorm.URL { return urlnorm.Canonical(l.URL) }

// Options bound the work and memory spent on one document. The zero value
// means "defaults" (see EnsureDefaults).
type Options struct {
	// MaxBytes stops reading the document after this many (raw) bytes.
	// Default 16 MiB (the fetcher's body cap).
	MaxBytes int64
	// MaxLinks stops extraction after this many links are emitted.
	// Default 10,000.
	MaxLinks int
	// MaxAttrLen skips attribute values longer than this (bytes). Default
	// 8 KiB (a URL over the filter's 2 KiB cap is dropped anyway; srcset
	// lists of many candidates still fit).
	MaxAttrLen int
	// MaxTokenBytes caps the tokenizer's buffer for one token (a huge tag
	// or text run); beyond it extraction stops. Default 4 MiB.
	MaxTokenBytes int
	// KeepDuplicates emits every occurrence of a URL; by default each
	// distinct URL is emitted once per document (the first occurrence).
	KeepDuplicates bool
	// RobotsToken is the crawler's robots token (fetcher.Options.
	// RobotsToken, e.g. "sextant"): a <meta name=TOKEN> is read like
	// <meta name=robots> (Result.Robots). "" reads only the latter.
	// Letters, digits, '_' and '-'; matched ASCII case-insensitively.
	RobotsToken string
	// FollowNoFollow emits the links of <a>, <area> and <form> elements
	// whose rel holds "nofollow" like any other. By default they are not
	// emitted and are counted in Result.NoFollow.
	FollowNoFollow bool
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.MaxBytes == 0 {
		o.MaxBytes = 16 << 20
	}
	if o.MaxLinks == 0 {
		o.MaxLinks = 10000
	}
	if o.MaxAttrLen == 0 {
		o.MaxAttrLen = 8 << 10
	}
	if o.MaxTokenBytes == 0 {
		o.MaxTokenBytes = 4 << 20
	}
}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	var errs []error
	if o.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxBytes %d < 0", ErrInvalidOptions, o.MaxBytes))
	}
	if o.MaxLinks < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxLinks %d < 0", ErrInvalidOptions, o.MaxLinks))
	}
	if o.MaxAttrLen < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxAttrLen %d < 0", ErrInvalidOptions, o.MaxAttrLen))
	}
	if o.MaxTokenBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxTokenBytes %d < 0", ErrInvalidOptions, o.MaxTokenBytes))
	}
	if o.RobotsToken != "" && !isProductToken(o.RobotsToken) {
		errs = append(errs, fmt.Errorf("%w: RobotsToken %q: want letters, digits, '_' and '-'", ErrInvalidOptions, o.RobotsToken))
	}
	return errors.Join(errs...)
}

// Truncation says why extraction stopped before the end of the document.
type Truncation uint8

const (
	NotTruncated   Truncation = iota
	TruncatedBytes            // MaxBytes reached
	TruncatedLinks            // MaxLinks reached
	TruncatedToken            // one token exceeded MaxTokenBytes
)

func (t Truncation) String() string {
	switch t {
	case NotTruncated:
		return "none"
	case TruncatedBytes:
		return "max-bytes"
	case TruncatedLinks:
		return "max-links"
	case TruncatedToken:
		return "max-token"
	}
	return fmt.Sprintf("Truncation(%d)", uint8(t))
}

// Result describes one Extract call.
type Result struct {
	Links      int        // links emitted
	Duplicates int        // repeated URLs not emitted (unless KeepDuplicates)
	Invalid    int        // references that failed to resolve
	Skipped    int        // javascript: and data: references, never resolved
	TooLong    int        // attribute values over MaxAttrLen, skipped
	Bytes      int64      // raw bytes read
	Charset    string     // encoding the document was decoded from
	Base       string     // base URL in effect at the end (after <base href>)
	Truncated  Truncation // why extraction stopped early, if it did
	// Robots holds the directives of the document's robots <meta>
	// elements (name "robots" or Options.RobotsToken), wherever they are
	// and however many (combined: the most restrictive wins). The caller
	// applies NoFollow to every link, including those before the <meta>.
	Robots Directives
	// NoFollow counts the links not emitted because their element's rel
	// holds "nofollow" (distinct URLs that no other link of the document
	// emitted; every occurrence with KeepDuplicates); 0 with
	// Options.FollowNoFollow.
	NoFollow int
	// Canonical is the target of the first <link rel=canonical href>,
	// resolved and canonical, or "" (the link is also emitted as any
	// <link href> is).
	Canonical string
}

// Extractor finds links in HTML documents, reusing its buffers between
// documents. It is not safe for concurrent use: give each worker its own.
// It needs no Close.
type Extractor struct {
	opts Options
	buf  []byte          // resolution scratch
	ubuf []byte          // attribute values with "&amp;" decoded
	seen map[uint64]bool // fingerprints of this document: emitted (true) or only in rel=nofollow links
	cs   charsetReader
	lim  io.LimitedReader
	xsrc xmlSource     // the XML path's byte source (xhtml.go)
	xbr  *bufio.Reader // buffers a transcoded document for xsrc
	// slowAttrs forces Tokenizer.TagAttr for every tag (tests compare).
	slowAttrs bool
	token     string // Options.RobotsToken, lower-case

	// per-document state
	base    *urlnorm.URL
	baseSet bool
	fn      func(Link)
	res     Result
}

// New returns an Extractor with the given options (copied; zero fields get
// defaults).
func New(opts Options) (*Extractor, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Extractor{opts: opts, seen: make(map[uint64]bool), token: strings.ToLower(opts.RobotsToken)}, nil
}

// Links extracts the links of one document with default options. See
// (*Extractor).Extract.
func Links(r io.Reader, base *urlnorm.URL, contentType string, fn func(Link)) error {
	e, _ := New(Options{})
	_, err := e.Extract(r, base, contentType, fn)
	return err
}

// Extract reads an HTML document from r, whose URL is base and whose
// Content-Type header is contentType ("" if absent), and calls fn for each
// link in document order. It decodes non-UTF-8 documents (charset from a
// BOM, the Content-Type, or a <meta> in the first 1024 bytes; otherwise
// UTF-8, or windows-1252 if the first 1024 bytes are not valid UTF-8).
// Documents served as application/xhtml+xml, application/xml or text/xml
// are read as XML (see extractXML); the last two yield links only if their
// root is an XHTML <html>.
// It returns an error only if reading r fails; hitting a limit is reported
// in Result.Truncated. It never panics on any input. Link's strings are
// freshly allocated (or constants) and may be retained by fn.
func (e *Extractor) Extract(r io.Reader, base *urlnorm.URL, contentType string, fn func(Link)) (Result, error) {
	if base == nil {
		return Result{}, ErrNilBase
	}
	e.base, e.baseSet, e.fn = base, false, fn
	e.res = Result{}
	clear(e.seen)
	defer func() { e.fn, e.base = nil, nil }()

	e.lim = io.LimitedReader{R: r, N: e.opts.MaxBytes}
	kind := kindOf(contentType)
	dr, name, err := e.cs.init(&e.lim, contentType, kind != kindHTML)
	e.res.Charset = name
	if err != nil {
		return e.finish(err)
	}
	if kind != kindHTML {
		err = e.extractXML(dr, kind)
	} else {
		err = e.tokenize(dr, 0)
	}
	if err == nil && e.lim.N <= 0 && e.res.Truncated == NotTruncated {
		var one [1]byte
		if n, _ := io.ReadFull(r, one[:]); n > 0 {
			e.res.Truncated = TruncatedBytes
		}
	}
	return e.finish(err)
}

func (e *Extractor) finish(err error) (Result, error) {
	e.res.Bytes = e.opts.MaxBytes - e.lim.N
	e.res.Base = e.base.String()
	e.lim.R = nil // do not keep the caller's reader reachable
	e.xsrc.reset(nil)
	if e.cs.br != nil {
		e.cs.br.Reset(nil)
	}
	return e.res, err
}

// errStop ends tokenization once MaxLinks is reached.
var errStop = errors.New("extract: stop")

// tokenize runs the tokenizer over r. depth > 0 for the re-tokenised
// contents of <noscript>.
func (e *Extractor) tokenize(r io.Reader, depth int) error {
	z := html.NewTokenizer(r)
	z.SetMaxBuf(e.opts.MaxTokenBytes)
	for {
		switch z.Next() {
		case html.ErrorToken:
			switch err := z.Err(); {
			case err == io.EOF:
				return nil
			case errors.Is(err, html.ErrBufferExceeded):
				e.res.Truncated = TruncatedToken
				return nil
			default:
				return fmt.Errorf("extract: reading document: %w", err)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			tag := tagOf(z.Raw())
			if tag == "" {
				continue
			}
			if tag == "noscript" {
				// A crawler runs no scripts, so it sees what a browser
				// with scripting off sees; the tokenizer treats
				// <noscript> as raw text, so tokenise the text again.
				if depth == 0 && z.Next() == html.TextToken {
					if err := e.tokenize(bytes.NewReader(z.Raw()), depth+1); err != nil {
						return err
					}
				}
				continue
			}
			if err := e.tag(z, tag); err != nil {
				if err == errStop {
					e.res.Truncated = TruncatedLinks
					return nil
				}
				return err
			}
		}
	}
}

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

// setBase applies the first <base href>, resolved against the document
// URL; later ones are ignored, as are failures and data:/javascript:
// results (the HTML standard's "frozen base URL" rules).
func (e *Extractor) setBase(v []byte) {
	if e.baseSet {
		return
	}
	e.baseSet = true
	b, err := urlnorm.Resolve(e.base, string(v))
	if err != nil {
		return
	}
	if sc := b.Scheme(); sc == "data" || sc == "javascript" {
		return
	}
	e.base = b
}

// emit resolves one reference and hands the link to fn.
func (e *Extractor) emit(ref []byte, tag, attr string) error {
	if e.res.Links >= e.opts.MaxLinks {
		return errStop
	}
	if neverCrawled(ref) {
		e.res.Skipped++
		return nil
	}
	var err error
	// The reference is only read during the call (AppendResolved does not
	// retain it), so a zero-copy view of the tokenizer's buffer is safe.
	e.buf, err = urlnorm.AppendResolved(e.buf[:0], e.base, bytesView(ref))
	if err != nil {
		e.res.Invalid++
		return nil
	}
	if !e.opts.KeepDuplicates {
		fp := xxhash.Sum64(e.buf) // == fingerprint.URL of the string
		if emitted, ok := e.seen[fp]; ok {
			if emitted {
				e.res.Duplicates++
				return nil
			}
			e.res.NoFollow-- // a followed link to it after all
		}
		e.seen[fp] = true
	}
	e.res.Links++
	if e.fn != nil {
		e.fn(Link{URL: string(e.buf), Tag: tag, Attr: attr})
	}
	return nil
}

// skipNoFollow counts a rel=nofollow link's URL, unless the document
// emitted it already or counted it before (a duplicate).
func (e *Extractor) skipNoFollow(ref []byte) {
	if neverCrawled(ref) {
		e.res.Skipped++
		return
	}
	var err error
	e.buf, err = urlnorm.AppendResolved(e.buf[:0], e.base, bytesView(ref))
	if err != nil {
		e.res.Invalid++
		return
	}
	if !e.opts.KeepDuplicates {
		fp := xxhash.Sum64(e.buf)
		if _, ok := e.seen[fp]; ok {
			e.res.Duplicates++
			return
		}
		e.seen[fp] = false
	}
	e.res.NoFollow++
}

// neverCrawled reports javascript: and data: references, skipped without
// resolving: they are never fetched, can be long, and the reference parser
// is slow on them.
func neverCrawled(ref []byte) bool {
	i := 0
	for i < len(ref) && ref[i] <= ' ' {
		i++
	}
	r := ref[i:]
	return len(r) >= 11 && asciiEqualFold(r[:11], "javascript:") ||
		len(r) >= 5 && asciiEqualFold(r[:5], "data:")
}

func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
