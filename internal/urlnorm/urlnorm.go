package urlnorm

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	wurl "github.com/nlnwa/whatwg-url/url"
)

// Sentinel errors. Errors returned by this package wrap one of them.
var (
	// ErrInvalid: the input is not a valid URL (or reference) per the
	// WHATWG URL Standard.
	ErrInvalid = errors.New("urlnorm: invalid URL")
	// ErrNilBase: Resolve was called with a nil base and a relative
	// reference.
	ErrNilBase = errors.New("urlnorm: nil base URL")
)

// parser is the reference WHATWG parser — Sextant's profile: the
// standard's behaviour (default options, no validation-error reporting,
// which costs allocations) except that '^' is added to the path
// percent-encode set, as the current standard (and its tests) require but
// whatwg-url v0.6.2 predates. It is stateless and safe for concurrent use.
var parser = wurl.NewParser(
	wurl.WithPathPercentEncodeSet(wurl.PathPercentEncodeSet.Set('^')),
)

// URL is a parsed, canonical URL. The zero value is not valid; obtain one
// from Parse or Resolve. A *URL is immutable and safe for concurrent use.
type URL struct {
	s string // canonical serialisation, fragment removed
	// Offsets into s: s[:schemeEnd] is the scheme; if hasHost,
	// s[hostStart:hostEnd] is the host name (with brackets for IPv6),
	// s[hostEnd:pathStart] is ":port" or empty; s[pathStart:pathEnd] is
	// the path; s[pathEnd:] is "?query" or empty.
	schemeEnd, hostStart, hostEnd, pathStart, pathEnd int32
	hasHost                                           bool
	// w caches the reference parser's form of s, set when the slow path
	// built this URL or first resolved against it, so that resolving
	// against it does not parse it again. Racing stores store equal
	// values. The parser only reads a base (it clones it), once its lazily
	// built search parameters exist: see shareable.
	w atomic.Pointer[wurl.Url]
}

// String returns the canonical form.
func (u *URL) String() string { return u.s }

// Scheme returns the lower-case scheme, without ':'.
func (u *URL) Scheme() string { return u.s[:u.schemeEnd] }

// Hostname returns the host without port: a lower-case ASCII (punycode)
// domain, a dotted IPv4 address or a bracketed IPv6 address; "" if none.
func (u *URL) Hostname() string { return u.s[u.hostStart:u.hostEnd] }

// Host returns the hostname plus ":port" when the port is not the scheme's
// default — the key for per-host politeness and budgets.
func (u *URL) Host() string { return u.s[u.hostStart:u.pathStart] }

// Port returns the explicit (non-default) port, or "".
func (u *URL) Port() string {
	if u.hostEnd == u.pathStart {
		return ""
	}
	return u.s[u.hostEnd+1 : u.pathStart]
}

// Path returns the serialised path ("/" for an http URL with an empty path).
func (u *URL) Path() string { return u.s[u.pathStart:u.pathEnd] }

// RawQuery returns the query without '?', or "".
func (u *URL) RawQuery() string {
	if int(u.pathEnd) == len(u.s) {
		return ""
	}
	return u.s[u.pathEnd+1:]
}

// RequestURI returns path?query, what goes on an HTTP request line.
func (u *URL) RequestURI() string { return u.s[u.pathStart:] }

// HasHost reports whether the URL has a host (every http/https URL has).
func (u *URL) HasHost() bool { return u.hasHost }

// IsHTTP reports whether the scheme is http or https.
func (u *URL) IsHTTP() bool {
	sc := u.Scheme()
	return sc == "http" || sc == "https"
}

// Host returns u's host (hostname plus non-default port); "" for nil.
func Host(u *URL) string {
	if u == nil {
		return ""
	}
	return u.Host()
}

// Parse parses an absolute URL and returns it in canonical form.
func Parse(raw string) (*URL, error) {
	var buf [256]byte
	if out, ok := fastResolve(buf[:0], nil, raw); ok {
		return fromCanonical(raw, out), nil
	}
	w, err := parser.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalid, clip(raw), err)
	}
	return fromWhatwg(w), nil
}

// Resolve resolves ref against base (as a browser resolves an href found in
// a document whose base URL is base) and returns the canonical result.
// base may be nil only if ref is absolute.
func Resolve(base *URL, ref string) (*URL, error) {
	var buf [256]byte
	if out, ok := fastResolve(buf[:0], base, ref); ok {
		return fromCanonical(ref, out), nil
	}
	return slowResolve(base, ref)
}

// AppendResolved appends the canonical form of ref resolved against base to
// dst. It is Resolve without building a *URL, for the extractor's hot path.
// It does not retain ref, so ref may alias a reused buffer.
func AppendResolved(dst []byte, base *URL, ref string) ([]byte, error) {
	if out, ok := fastResolve(dst, base, ref); ok {
		return out, nil
	}
	u, err := slowResolve(base, strings.Clone(ref))
	if err != nil {
		return dst, err
	}
	return append(dst, u.s...), nil
}

// Normalize returns the canonical form of the absolute URL raw.
func Normalize(raw string) (string, error) {
	u, err := Parse(raw)
	if err != nil {
		return "", err
	}
	return u.s, nil
}

// maxSlowSegments bounds the path separators the reference parser is given:
// whatwg-url builds paths by repeated string concatenation, quadratic in
// the number of segments (8,000 backslashes take ~120 ms). A URL with more
// segments than this is a crawler trap anyway. The fast path has no such
// limit (it is linear).
const maxSlowSegments = 512

func slowResolve(base *URL, ref string) (*URL, error) {
	p := ref
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	n := strings.Count(p, "/") + strings.Count(p, "\\")
	if base != nil {
		n += strings.Count(base.Path(), "/")
	}
	if n > maxSlowSegments {
		return nil, fmt.Errorf("%w: %q: more than %d path segments", ErrInvalid, clip(ref), maxSlowSegments)
	}
	var wb *wurl.Url
	if base != nil {
		if wb = base.w.Load(); wb == nil {
			var err error
			if wb, err = parser.Parse(base.s); err != nil {
				// Cannot happen for a *URL built by this package (idempotence).
				return nil, fmt.Errorf("%w: base %q: %v", ErrInvalid, clip(base.s), err)
			}
			base.w.Store(shareable(wb))
		}
	}
	w, err := parser.BasicParser(ref, wb, nil, wurl.NoState)
	if err != nil {
		if base == nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrInvalid, clip(ref), err)
		}
		return nil, fmt.Errorf("%w: %q against %q: %v", ErrInvalid, clip(ref), clip(base.s), err)
	}
	return fromWhatwg(w), nil
}

// fromCanonical builds a URL from the fast path's output, reusing the input
// string when the input was already canonical (no allocation).
func fromCanonical(in string, out []byte) *URL {
	s := in
	if string(out) != in { // no allocation for the comparison
		s = string(out)
	}
	u := &URL{s: s}
	u.split()
	return u
}

// shareable prepares w to be read by several goroutines: whatwg-url's
// Url.Clone (which the parser calls on a base) builds the search
// parameters on first use — a write — so build them now, before w is
// published.
func shareable(w *wurl.Url) *wurl.Url {
	w.SearchParams()
	return w
}

func fromWhatwg(w *wurl.Url) *URL {
	s := w.Href(true)
	if w.OpaquePath() {
		// The standard (since 2024) percent-encodes the last space of an
		// opaque path followed by a query or fragment, so that the
		// serialisation re-parses to itself; whatwg-url v0.6.2 predates
		// it. A trailing space can only be there if '?' or '#' followed
		// (the input's own trailing spaces are trimmed).
		p := w.Pathname()
		if strings.HasSuffix(p, " ") {
			i := len(w.Scheme()) + 1 + len(p) - 1
			s = s[:i] + "%20" + s[i+1:]
		}
	}
	u := &URL{s: s}
	u.w.Store(shareable(w))
	u.split()
	return u
}

// split computes the component offsets of a canonical serialisation. In a
// canonical string, userinfo cannot contain '@', '/', '?' or ':' and paths
// cannot contain '?' (all percent-encoded), hosts cannot contain ':' unless
// bracketed, so plain scanning is exact.
func (u *URL) split() {
	s := u.s
	i := strings.IndexByte(s, ':')
	u.schemeEnd = int32(i)
	rest := i + 1
	if strings.HasPrefix(s[rest:], "//") {
		u.hasHost = true
		a := rest + 2
		end := len(s)
		if j := strings.IndexAny(s[a:], "/?"); j >= 0 {
			end = a + j
		}
		h := a
		if j := strings.LastIndexByte(s[a:end], '@'); j >= 0 {
			h = a + j + 1
		}
		he := end
		if h < end && s[h] == '[' {
			if j := strings.IndexByte(s[h:end], ']'); j >= 0 {
				he = h + j + 1
			}
		} else if j := strings.IndexByte(s[h:end], ':'); j >= 0 {
			he = h + j
		}
		u.hostStart, u.hostEnd, u.pathStart = int32(h), int32(he), int32(end)
	} else {
		u.hostStart, u.hostEnd, u.pathStart = int32(rest), int32(rest), int32(rest)
	}
	u.pathEnd = int32(len(s))
	if j := strings.IndexByte(s[u.pathStart:], '?'); j >= 0 {
		u.pathEnd = u.pathStart + int32(j)
	}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
