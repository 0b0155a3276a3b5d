package crawl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// MaxWorkers bounds Options.Workers (and --workers, and the node config's
// workers). Each worker has its own front cache, buffers and goroutine;
// 100,000 workers took 1.09 GB before fetching anything, and politeness
// (one request per host at a time) leaves more than a few thousand idle
// on any real crawl.
const MaxWorkers = 4096

// DefaultScope is the scope of a crawl that sets none (the flags', the
// node config's): every host.
const DefaultScope = "any"

// ParseScope parses a --scope value: any, host, domain or suffixes.
func ParseScope(s string) (extract.Scope, error) {
	switch s {
	case "any":
		return extract.ScopeAny, nil
	case "host", "same-host":
		return extract.ScopeSameHost, nil
	case "domain", "same-domain":
		return extract.ScopeSameDomain, nil
	case "suffixes", "suffix":
		return extract.ScopeSuffixes, nil
	}
	return 0, fmt.Errorf("%w: --scope %q: want any, host, domain or suffixes", ErrInvalidOptions, s)
}

// ParseResolve parses DOMAIN=IP[:PORT] pairs into fetcher.Options.Resolve.
// The address must be an IP literal. Any override needs allowPrivate: a
// loopback or private target is refused by the fetcher's guard otherwise,
// and sending a domain's traffic elsewhere is an operator's decision.
func ParseResolve(pairs []string, allowPrivate bool) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	var errs []error
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		dom, addr, ok := strings.Cut(p, "=")
		dom = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(dom), "."))
		addr = strings.TrimSpace(addr)
		if !ok || dom == "" || addr == "" || strings.ContainsAny(dom, "/:@ ") {
			errs = append(errs, fmt.Errorf("%w: --resolve %q: want DOMAIN=IP[:PORT]", ErrInvalidOptions, p))
			continue
		}
		ipStr := addr
		if h, port, err := net.SplitHostPort(addr); err == nil {
			if _, perr := netip.ParseAddrPort(addr); perr != nil || port == "" {
				errs = append(errs, fmt.Errorf("%w: --resolve %q: bad port", ErrInvalidOptions, p))
				continue
			}
			ipStr = h
		}
		ip, err := netip.ParseAddr(ipStr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: --resolve %q: %q is not an IP address", ErrInvalidOptions, p, ipStr))
			continue
		}
		if !allowPrivate {
			what := "a public address"
			if ip.IsLoopback() {
				what = "a loopback address"
			} else if ip.IsPrivate() || ip.IsLinkLocalUnicast() {
				what = "a private address"
			}
			errs = append(errs, fmt.Errorf("%w: --resolve %q: %s; pass --allow-private to override resolution", ErrInvalidOptions, p, what))
			continue
		}
		m[dom] = addr
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return m, nil
}

// seedFilter is a LinkFilter whose host and domain scopes are relative to
// a fixed set of seeds (the DUE does not carry each URL's seed).
type seedFilter struct {
	f       *extract.Filter
	scope   extract.Scope
	hosts   map[string]string // host name → seed host
	domains map[string]string // registered domain → seed host
	any     string            // some seed host, for the Allow list
	maxURL  int               // opts.MaxURLLength, for the crawl log
}

// MaxURLLength is the longest URL the filter admits (-1: no limit); the
// crawl log keeps URLs up to it whole (CrawlLog.SetMaxURLLength).
func (s *seedFilter) MaxURLLength() int { return s.maxURL }

// NewSeedFilter returns a LinkFilter applying opts; with ScopeSameHost or
// ScopeSameDomain a URL is in scope if it is on the host (or registered
// domain) of any of seeds. Link depth is the node's (Options.MaxDepth).
func NewSeedFilter(opts extract.FilterOptions, seeds []string) (LinkFilter, error) {
	f, err := extract.NewFilter(opts)
	if err != nil {
		return nil, err
	}
	sf := &seedFilter{f: f, scope: opts.Scope, hosts: map[string]string{}, domains: map[string]string{}, maxURL: opts.MaxURLLength}
	for _, s := range seeds {
		u, err := urlnorm.Parse(s)
		if err != nil || !u.HasHost() {
			continue
		}
		h := u.Hostname()
		sf.hosts[h] = u.Host()
		if d, err := publicsuffix.EffectiveTLDPlusOne(h); err == nil {
			sf.domains[d] = u.Host()
		} else {
			sf.domains[h] = u.Host()
		}
		if sf.any == "" {
			sf.any = u.Host()
		}
	}
	if (opts.Scope == extract.ScopeSameHost || opts.Scope == extract.ScopeSameDomain) && sf.any == "" {
		return nil, errors.New("crawl: scope host or domain needs at least one seed")
	}
	return sf, nil
}

// Allow implements LinkFilter.
func (s *seedFilter) Allow(u *urlnorm.URL) bool {
	seed := s.any
	switch s.scope {
	case extract.ScopeSameHost:
		if h, ok := s.hosts[u.Hostname()]; ok {
			seed = h
		}
	case extract.ScopeSameDomain:
		d, err := publicsuffix.EffectiveTLDPlusOne(u.Hostname())
		if err != nil {
			d = u.Hostname()
		}
		if h, ok := s.domains[d]; ok {
			seed = h
		}
	}
	ok, _ := s.f.Allow(u, seed)
	return ok
}

// TLSConfigWithCAFile is the fetcher's TLS config for --ca-file: the system
// roots plus every certificate of the PEM file path; nil (the fetcher's
// default, system roots only) when path is "". An unreadable file, or one
// without a PEM certificate, is an ErrInvalidOptions naming the flag: a
// crawl that silently trusted nothing more would fail every handshake.
func TLSConfigWithCAFile(path string) (*tls.Config, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --ca-file: %v", ErrInvalidOptions, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool() // no system roots here: the file's alone
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: --ca-file %s: no PEM certificate in it", ErrInvalidOptions, path)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
