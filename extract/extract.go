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
	// decodeText makes encoding/xml read all text on the XML path
	// instead of xmlSource skipping it (tests compare).
	decodeText bool
	token      string // Options.RobotsToken, lower-case

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
	e.resetSeen()
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

// seenKept bounds the fingerprints of a document whose map is cleared for
// the next rather than replaced: clearing a map costs its capacity, not
// its length, so one page of thousands of links made every later page's
// clear cost microseconds.
const seenKept = 512

// resetSeen empties e.seen for a new document.
func (e *Extractor) resetSeen() {
	if len(e.seen) > seenKept {
		e.seen = make(map[uint64]bool)
		return
	}
	clear(e.seen)
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
