package sitemap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors of Parse, wrapped with %w.
var (
	ErrNotSitemap    = errors.New("sitemap: not a sitemap")
	ErrTooManyURLs   = errors.New("sitemap: more URLs than the per-file limit")
	ErrTooLarge      = errors.New("sitemap: larger than the per-file byte limit (uncompressed)")
	ErrTooDeep       = errors.New("sitemap: XML nested too deeply")
	ErrTokenTooLarge = errors.New("sitemap: XML token too large")
	ErrMalformed     = errors.New("sitemap: malformed")
)

// Kind is the format of a sitemap file.
type Kind uint8

// The kinds of sitemap file.
const (
	KindUnknown Kind = iota
	KindURLSet       // <urlset>: entries are pages
	KindIndex        // <sitemapindex>: entries are child sitemaps
	KindText         // one URL per line: entries are pages
)

func (k Kind) String() string {
	if k > KindText {
		return fmt.Sprintf("kind(%d)", k)
	}
	return [...]string{"unknown", "urlset", "sitemapindex", "text"}[k]
}

// Entry is one <url> of a urlset, one <sitemap> of an index, or one line
// of a text sitemap. Only Loc is set for text sitemaps and indexes
// (LastMod too, for an index, when given).
type Entry struct {
	Loc        string    // absolute http(s) URL, as written (XML-unescaped, trimmed)
	LastMod    time.Time // zero if absent or not a W3C Datetime
	ChangeFreq string    // as written, lower-cased; "" if absent
	Priority   float64   // 0.0–1.0; 0.5 (the protocol's default) if absent or invalid
}

// Result counts what Parse saw.
type Result struct {
	Kind       Kind
	URLs       int   // entries passed to the callback
	Dropped    int   // valid entries beyond Options.MaxURLs
	OutOfPath  int   // entries that break the location rule
	Invalid    int   // entries whose loc is empty, too long, not an absolute http(s) URL or not UTF-8
	Bytes      int64 // decompressed bytes read
	Compressed bool  // the input was gzip
}

// Parse reads one sitemap file from r and calls fn for every valid entry,
// in order, at most opts.MaxURLs times. base is the URL the file was
// fetched from (the robots.txt URL for RuleHost); it may be "" only with
// RuleNone. An error of fn stops the parse and is returned as is. The
// Result is valid even when err is not nil.
func Parse(r io.Reader, base string, opts Options, fn func(Entry) error) (Result, error) {
	return parse(r, base, opts, func(_ Kind, e Entry) error { return fn(e) })
}

// ParseKind is Parse with the file's kind passed to fn (known before the
// first entry), for a caller that handles pages and child sitemaps as
// they come.
func ParseKind(r io.Reader, base string, opts Options, fn func(Kind, Entry) error) (Result, error) {
	return parse(r, base, opts, fn)
}

// parse is Parse with the file's kind passed to fn (known before the
// first entry).
func parse(r io.Reader, base string, opts Options, fn func(Kind, Entry) error) (Result, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	p := &parser{opts: opts, fn: fn}
	if opts.Rule != RuleNone {
		b, err := url.Parse(base)
		if err != nil || b.Host == "" {
			return Result{}, fmt.Errorf("%w: base %q is not an absolute URL", ErrOptions, base)
		}
		p.base = b
		p.baseHost = hostPort(b)
		p.baseDir = b.EscapedPath()[:strings.LastIndexByte(b.EscapedPath(), '/')+1]
		if p.baseDir == "" {
			p.baseDir = "/"
		}
	}
	err := p.run(r)
	p.res.Bytes = opts.MaxBytes - p.cr.left
	if p.cr.left < 0 {
		p.res.Bytes = opts.MaxBytes
	}
	if err == nil && p.res.Dropped > 0 {
		err = fmt.Errorf("%w: %d URLs beyond %d dropped", ErrTooManyURLs, p.res.Dropped, opts.MaxURLs)
	}
	return p.res, err
}

type parser struct {
	opts     Options
	fn       func(Kind, Entry) error
	base     *url.URL
	baseHost string
	baseDir  string
	res      Result
	cr       capReader
	fnErr    error
}

func (p *parser) run(r io.Reader) error {
	zr := bufio.NewReader(r)
	if magic, _ := zr.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(zr)
		if err != nil {
			return fmt.Errorf("%w: gzip: %v", ErrMalformed, err)
		}
		p.res.Compressed = true
		p.cr = capReader{r: gz, left: p.opts.MaxBytes}
	} else {
		p.cr = capReader{r: zr, left: p.opts.MaxBytes}
	}
	br := bufio.NewReaderSize(&p.cr, max(4096, p.opts.MaxURLLength+8))
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return fmt.Errorf("%w: empty", ErrNotSitemap)
		} else if err != nil {
			return p.readErr(err)
		}
		if !isSpace(c) {
			br.UnreadByte()
			if c == '<' {
				return p.xml(br)
			}
			return p.text(br)
		}
	}
}

// readErr wraps an error of the input (the cap's, gzip's or the reader's).
func (p *parser) readErr(err error) error {
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrTokenTooLarge) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// emit validates e, applies the location rule and the URL limit, and calls
// fn. It returns fn's error.
func (p *parser) emit(e Entry) error {
	e.Loc = strings.TrimSpace(e.Loc)
	if len(e.Loc) == 0 || len(e.Loc) > p.opts.MaxURLLength || !utf8.ValidString(e.Loc) {
		p.res.Invalid++
		return nil
	}
	u, err := url.Parse(e.Loc)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		p.res.Invalid++
		return nil
	}
	if !p.allowed(u) {
		p.res.OutOfPath++
		return nil
	}
	if p.res.URLs >= p.opts.MaxURLs {
		p.res.Dropped++
		return nil
	}
	p.res.URLs++
	if err := p.fn(p.res.Kind, e); err != nil {
		p.fnErr = err
		return err
	}
	return nil
}

// allowed applies the location rule to u. Dot segments are removed first,
// so /path/../x does not pass for /path/.
func (p *parser) allowed(u *url.URL) bool {
	if p.opts.Rule == RuleNone {
		return true
	}
	if u.Scheme != p.base.Scheme || hostPort(u) != p.baseHost {
		return false
	}
	if p.opts.Rule == RuleHost {
		return true
	}
	clean := u.ResolveReference(&url.URL{Path: u.Path, RawPath: u.RawPath})
	return strings.HasPrefix(clean.EscapedPath(), p.baseDir)
}

// hostPort is u's host lower-cased with the scheme's default port removed.
func hostPort(u *url.URL) string {
	h := strings.ToLower(u.Host)
	if (u.Scheme == "http" && strings.HasSuffix(h, ":80")) || (u.Scheme == "https" && strings.HasSuffix(h, ":443")) {
		h = h[:strings.LastIndexByte(h, ':')]
	}
	return h
}

// text parses a plain-text sitemap: one URL per line. Lines longer than
// the reader's buffer are skipped (counted Invalid) without being held.
func (p *parser) text(br *bufio.Reader) error {
	p.res.Kind = KindText
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			p.res.Invalid++
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			line = nil
		}
		if s := strings.TrimSpace(string(line)); s != "" {
			if e := p.emit(Entry{Loc: s, Priority: 0.5}); e != nil {
				return e
			}
		}
		if err == io.EOF {
			break
		} else if err != nil {
			return p.readErr(err)
		}
	}
	if p.res.URLs+p.res.Dropped+p.res.OutOfPath == 0 && p.res.Invalid > 0 {
		return fmt.Errorf("%w: no line of the text is a URL", ErrNotSitemap)
	}
	return nil
}

// capReader reads at most left bytes and fails with ErrTooLarge if the
// input has more: the cap applies after decompression, so it cuts bombs.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(b []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		n, err := io.ReadFull(c.r, one[:])
		if n > 0 {
			c.left = -1
			return 0, ErrTooLarge
		}
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		return 0, err
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	return n, err
}

// w3cLayouts are the W3C Datetime forms sitemaps.org allows for lastmod.
var w3cLayouts = [...]string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02", "2006-01", "2006"}

func parseLastMod(s string) time.Time {
	for _, l := range w3cLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

func parsePriority(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v <= 1) {
		return 0.5
	}
	return v
}
