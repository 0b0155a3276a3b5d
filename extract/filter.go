package extract

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/net/publicsuffix"

	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// Scope restricts which hosts a crawl may enter, relative to the host of
// the seed a URL descends from.
type Scope uint8

const (
	ScopeAny        Scope = iota // every host
	ScopeSameHost                // the seed's host name (ports ignored)
	ScopeSameDomain              // the seed's registered domain (eTLD+1, public suffix list)
	ScopeSuffixes                // hosts equal to or under one of FilterOptions.Suffixes
)

func (s Scope) String() string {
	switch s {
	case ScopeAny:
		return "any"
	case ScopeSameHost:
		return "same-host"
	case ScopeSameDomain:
		return "same-domain"
	case ScopeSuffixes:
		return "suffixes"
	}
	return fmt.Sprintf("Scope(%d)", uint8(s))
}

// Reason says why a URL was accepted or rejected; the crawler counts them.
type Reason uint8

const (
	Accepted               Reason = iota
	RejectScheme                  // scheme not in Schemes
	RejectNoHost                  // URL has no host
	RejectLength                  // longer than MaxURLLength
	RejectDenied                  // host on the Deny list
	RejectScope                   // host outside the scope
	RejectRepeatedSegments        // a path segment repeats more than MaxRepeatedSegments times
	NumReasons                    // number of Reason values, for counter arrays
)

var reasonNames = [NumReasons]string{"accepted", "scheme", "no-host", "length", "denied", "scope", "repeated-segments"}

func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// FilterOptions configure a Filter. Zero fields get defaults
// (EnsureDefaults).
type FilterOptions struct {
	// Schemes allowed; default http and https.
	Schemes []string
	// MaxURLLength in bytes of the canonical URL; default 2048, -1 = no limit.
	MaxURLLength int
	// MaxRepeatedSegments rejects a URL whose path has a non-empty segment
	// occurring more than this many times (/a/b/a/b/a/b/a/...: a crawler
	// trap of relative links); default 3, -1 = no limit.
	MaxRepeatedSegments int
	// Scope of the crawl relative to the seed's host.
	Scope Scope
	// Suffixes for ScopeSuffixes: domains whose hosts are in scope
	// ("example.org" admits example.org and www.example.org).
	Suffixes []string
	// Allow lists domains always in scope, whatever Scope says.
	Allow []string
	// Deny lists domains never crawled; Deny beats Allow.
	Deny []string
}

// EnsureDefaults fills zero fields with their defaults.
func (o *FilterOptions) EnsureDefaults() {
	if len(o.Schemes) == 0 {
		o.Schemes = []string{"http", "https"}
	}
	if o.MaxURLLength == 0 {
		o.MaxURLLength = 2048
	}
	if o.MaxRepeatedSegments == 0 {
		o.MaxRepeatedSegments = 3
	}
}

// Validate reports every invalid field.
func (o *FilterOptions) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, a...)...))
	}
	if o.MaxURLLength < -1 {
		bad("MaxURLLength %d", o.MaxURLLength)
	}
	if o.MaxRepeatedSegments < -1 {
		bad("MaxRepeatedSegments %d", o.MaxRepeatedSegments)
	}
	if o.Scope > ScopeSuffixes {
		bad("unknown Scope %d", o.Scope)
	}
	if o.Scope == ScopeSuffixes && len(o.Suffixes) == 0 {
		bad("ScopeSuffixes needs Suffixes")
	}
	for _, list := range [][]string{o.Suffixes, o.Allow, o.Deny} {
		for _, d := range list {
			if _, err := canonicalDomain(d); err != nil {
				bad("domain %q: %v", d, err)
			}
		}
	}
	return errors.Join(errs...)
}

// canonicalDomain returns a list entry in the form hosts take in canonical
// URLs (lower case, punycode), so "Bücher.example" matches.
func canonicalDomain(d string) (string, error) {
	d = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(d), "."), ".")
	if d == "" || strings.ContainsAny(d, "/:?#@") {
		return "", errors.New("not a host name")
	}
	u, err := urlnorm.Parse("http://" + d + "/")
	if err != nil {
		return "", err
	}
	return u.Hostname(), nil
}

// Filter decides which discovered URLs are worth crawling. It is
// immutable after NewFilter and safe for concurrent use; it needs no Close.
type Filter struct {
	opts                  FilterOptions
	suffixes, allow, deny []string
}

// NewFilter returns a Filter for opts (copied; zero fields get defaults).
func NewFilter(opts FilterOptions) (*Filter, error) {
	opts.Schemes = slices.Clone(opts.Schemes)
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	f := &Filter{opts: opts}
	conv := func(list []string) []string {
		out := make([]string, 0, len(list))
		for _, d := range list {
			c, _ := canonicalDomain(d) // validated above
			out = append(out, c)
		}
		return out
	}
	f.suffixes, f.allow, f.deny = conv(opts.Suffixes), conv(opts.Allow), conv(opts.Deny)
	for i, s := range f.opts.Schemes {
		f.opts.Schemes[i] = strings.ToLower(s)
	}
	return f, nil
}

// Allow reports whether u, found in a crawl that started from a seed on
// seedHost ("host" or "host:port"; used only by ScopeSameHost and
// ScopeSameDomain), should be crawled, and if not, the first failing rule in
// this order: scheme, host, length, deny list, scope (the Allow list admits
// out-of-scope hosts), repeated path segments. Link depth and per-host
// budgets are not a filter's business: the crawler applies its MaxDepth to
// the depth that travels with each URL, and the frontier's persisted
// HostBudget counts URLs after the URL-seen test.
func (f *Filter) Allow(u *urlnorm.URL, seedHost string) (bool, Reason) {
	if !slices.Contains(f.opts.Schemes, u.Scheme()) {
		return false, RejectScheme
	}
	host := u.Hostname()
	if !u.HasHost() || host == "" {
		return false, RejectNoHost
	}
	if f.opts.MaxURLLength >= 0 && len(u.String()) > f.opts.MaxURLLength {
		return false, RejectLength
	}
	if underAny(host, f.deny) {
		return false, RejectDenied
	}
	if !f.inScope(host, seedHost) && !underAny(host, f.allow) {
		return false, RejectScope
	}
	if f.opts.MaxRepeatedSegments >= 0 && maxSegmentRepeats(u.Path()) > f.opts.MaxRepeatedSegments {
		return false, RejectRepeatedSegments
	}
	return true, Accepted
}

func (f *Filter) inScope(host, seedHost string) bool {
	switch f.opts.Scope {
	case ScopeAny:
		return true
	case ScopeSuffixes:
		return underAny(host, f.suffixes)
	}
	seed := hostnameOf(seedHost)
	if seed == "" {
		return false
	}
	if f.opts.Scope == ScopeSameHost {
		return host == seed
	}
	return host == seed || registeredDomain(host) == registeredDomain(seed)
}

// hostnameOf lower-cases "host[:port]" and drops the port.
func hostnameOf(h string) string {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// registeredDomain returns eTLD+1, or the host itself for IP literals,
// public suffixes and other hosts without one.
func registeredDomain(h string) string {
	h = strings.TrimSuffix(h, ".")
	if h == "" || h[0] == '[' || isDigit(h[len(h)-1]) {
		return h // IPv6 or IPv4 literal
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return h
	}
	return d
}

// underAny reports whether host equals or is a subdomain of one of domains.
func underAny(host string, domains []string) bool {
	host = strings.TrimSuffix(host, ".")
	for _, d := range domains {
		if host == d || len(host) > len(d) && host[len(host)-len(d)-1] == '.' && host[len(host)-len(d):] == d {
			return true
		}
	}
	return false
}

// maxSegmentRepeats returns how often the most frequent non-empty path
// segment occurs.
func maxSegmentRepeats(path string) int {
	var stack [32]uint64
	hs := stack[:0]
	for len(path) > 0 {
		path = path[1:] // the '/'
		seg := path
		if i := strings.IndexByte(path, '/'); i >= 0 {
			seg, path = path[:i], path[i:]
		} else {
			path = ""
		}
		if seg != "" {
			hs = append(hs, xxhash.Sum64String(seg))
		}
	}
	slices.Sort(hs)
	best, run := 0, 0
	for i := range hs {
		if i > 0 && hs[i] == hs[i-1] {
			run++
		} else {
			run = 1
		}
		best = max(best, run)
	}
	return best
}
