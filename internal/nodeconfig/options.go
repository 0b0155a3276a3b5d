package nodeconfig

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// LookupFunc resolves a host name (net.DefaultResolver.LookupNetIP with
// network "ip" fits).
type LookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// ResolveMap returns Resolve in fetcher.Options.Resolve form ("ip" or
// "ip:port"), looking up every host name with lookup (once: a restarted
// container gets a fresh address on its next start). IP literals never
// reach lookup.
func (c *Config) ResolveMap(ctx context.Context, lookup LookupFunc) (map[string]string, error) {
	if len(c.Resolve) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(c.Resolve))
	for dom, target := range c.Resolve {
		host, port, err := net.SplitHostPort(target)
		if err != nil {
			host, port = target, ""
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			if lookup == nil {
				return nil, fmt.Errorf("nodeconfig: resolve[%q]: %q is not an IP and no lookup is available", dom, host)
			}
			ips, lerr := lookup(ctx, "ip", host)
			if lerr != nil {
				return nil, fmt.Errorf("nodeconfig: resolve[%q]: look up %q: %w", dom, host, lerr)
			}
			if len(ips) == 0 {
				return nil, fmt.Errorf("nodeconfig: resolve[%q]: %q has no address", dom, host)
			}
			ip = ips[0]
			for _, a := range ips { // prefer IPv4: compose networks are v4
				if a.Unmap().Is4() {
					ip = a.Unmap()
					break
				}
			}
		}
		if port != "" {
			out[strings.ToLower(strings.TrimSuffix(dom, "."))] = net.JoinHostPort(ip.String(), port)
		} else {
			out[strings.ToLower(strings.TrimSuffix(dom, "."))] = ip.String()
		}
	}
	return out, nil
}

// SeedList returns Seeds followed by the URLs of SeedsFile (one per line,
// '#' starts a comment, blank lines skipped), checked: bad seeds are
// skipped and counted, with examples ("seeds[1]", "seeds_file line 7") for
// the caller to report. No valid seed at all is an ErrInvalid.
func (c *Config) SeedList() (*crawl.SeedList, error) {
	l := &crawl.SeedList{}
	for i, s := range c.Seeds {
		l.Add(fmt.Sprintf("seeds[%d]", i), s)
	}
	if c.SeedsFile != "" {
		more, err := crawl.ReadSeedList(c.SeedsFile, 0)
		if err != nil {
			return nil, fmt.Errorf("nodeconfig: seeds_file: %w", err)
		}
		l.Merge("seeds_file", more)
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return l, nil
}

// ReadSeeds is SeedList's valid URLs (use SeedList to report the others).
func (c *Config) ReadSeeds() ([]string, error) {
	l, err := c.SeedList()
	if err != nil {
		return nil, err
	}
	return l.URLs, nil
}

// MemberOptions builds the options of crawl.NewMember (memberserve.Start). resolve is the
// result of ResolveMap and seeds that of ReadSeeds (the scope may be
// relative to them). It loads the TLS files. The Listener is left nil:
// the caller binds Listen.
func (c *Config) MemberOptions(seeds []string, resolve map[string]string) (crawl.MemberOptions, error) {
	scope, err := crawl.ParseScope(c.Scope)
	if err != nil {
		return crawl.MemberOptions{}, err
	}
	lf, err := crawl.NewSeedFilter(extract.FilterOptions{
		MaxRepeatedSegments: c.MaxRepeatedSegments, Scope: scope, Suffixes: c.Suffixes,
	}, seeds)
	if err != nil {
		return crawl.MemberOptions{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	tn, err := tlsutil.Load(c.TLS.CA, c.TLS.Cert, c.TLS.Key)
	if err != nil {
		return crawl.MemberOptions{}, fmt.Errorf("nodeconfig: tls: %w", err)
	}
	if _, err := crawl.TLSConfigWithCAFile(c.CAFile); err != nil {
		return crawl.MemberOptions{}, fmt.Errorf("%w: ca_file: %w", ErrInvalid, err)
	}
	o, err := c.NodeOptions(lf, resolve)
	if err != nil {
		return crawl.MemberOptions{}, err
	}
	members := make([]hostsplit.Member, len(c.Members))
	for i, m := range c.Members {
		members[i] = hostsplit.Member{ID: hostsplit.NodeID(m.ID), Addr: m.Addr}
	}
	palgo, psize := c.PeerCacheAlgo, *c.PeerCacheSize
	if psize == 0 {
		palgo = "none"
	}
	mo := crawl.DefaultMemberOptions()
	mo.Node, mo.Self, mo.Members, mo.TLS = o, c.ID, members, tn
	mo.PeerCacheAlgo, mo.PeerCacheSize = palgo, psize
	mo.Epoch, mo.Joining = c.Epoch, c.Join
	mo.WireCoalesce = c.wireCoalesce()
	return mo, nil
}

// nodeOptions is the node part of MemberOptions: crawl.DefaultOptions
// with what the file sets.
func (c *Config) nodeOptions(lf crawl.LinkFilter, resolve map[string]string) crawl.Options {
	o := crawl.DefaultOptions()
	o.ID, o.DataDir, o.Workers = c.ID, c.DataDir, c.Workers
	fr := &o.Frontier
	if p := c.Politeness.MinDelay; p != nil {
		fr.MinDelay = time.Duration(*p)
	}
	if p := c.Politeness.MaxDelay; p != nil {
		fr.MaxDelay = time.Duration(*p)
	}
	if p := c.Politeness.Factor; p != nil {
		fr.Factor = *p
	}
	if p := c.Politeness.FailureBackoff; p != nil {
		fr.FailureBackoff = time.Duration(*p)
	}
	if p := c.Politeness.MaxFailureBackoff; p != nil {
		fr.MaxFailureBackoff = time.Duration(*p)
	}
	if c.Dispatch != "" {
		fr.Dispatch = c.Dispatch
	}
	tlsConf, _ := crawl.TLSConfigWithCAFile(c.CAFile) // MemberOptions reports its error
	o.Fetcher.AllowPrivate, o.Fetcher.Resolve, o.Fetcher.TLSConfig = c.AllowPrivate, resolve, tlsConf
	if c.UserAgent != "" {
		o.Fetcher.UserAgent = c.UserAgent
	}
	if c.Proxy != "" {
		o.Fetcher.Proxy, _ = fetcher.ParseProxy(c.Proxy) // Validate reports its error
	}
	if c.BodyCap != 0 {
		o.Fetcher.BodyCap, o.Extract.MaxBytes = c.BodyCap, c.BodyCap
	}
	if c.FetchTimeout != nil {
		o.Fetcher.FetchTimeout = time.Duration(*c.FetchTimeout)
	}
	if c.FetchAttempts != 0 {
		o.FetchAttempts = c.FetchAttempts
	}
	o.CacheAlgo, o.CachePerWorker = c.CacheAlgo, *c.CachePerWorker
	if o.CachePerWorker == 0 {
		o.CacheAlgo = "none"
	}
	// -1 is unbounded in both; the soft budget is half, as the flags'.
	o.MaxPagesPerHost, o.SoftPagesPerHost = c.MaxPagesPerHost, max(c.MaxPagesPerHost, 0)/2
	if c.NoFollow != "" {
		o.NoFollow = c.NoFollow
	}
	o.Filter = lf
	o.DUEFsync = c.DUEFsync
	o.WARCArchive.Dir, o.WARCArchive.Metadata = c.WARCDir, c.WARCMetadata
	if c.WARCPrefix != "" {
		o.WARCArchive.Prefix = c.WARCPrefix
	}
	if c.WARCMaxSize != 0 {
		o.WARCArchive.MaxSize = c.WARCMaxSize
	}
	if c.WARCCompression != "" {
		o.WARCArchive.Compression = c.WARCCompression
	}
	if c.DUEFlush != nil {
		o.DUEFlushInterval = time.Duration(*c.DUEFlush)
	}
	c.revisitOptions(&o.Revisit)
	return o
}

// NodeOptions is the node part of MemberOptions, defaulted and validated.
// lf is the link filter (nil: none); resolve is ResolveMap's result.
func (c *Config) NodeOptions(lf crawl.LinkFilter, resolve map[string]string) (crawl.Options, error) {
	o := c.nodeOptions(lf, resolve)
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return crawl.Options{}, err
	}
	return o, nil
}

// wireCoalesce maps wire_coalesce to crawl.MemberOptions.WireCoalesce:
// unset takes the default (0 there), 0 or negative here sends every
// batch alone (negative there).
func (c *Config) wireCoalesce() time.Duration {
	switch {
	case c.WireCoalesce == nil:
		return 0
	case *c.WireCoalesce <= 0:
		return -1
	}
	return time.Duration(*c.WireCoalesce)
}
