package fetcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/sextant-crawler/sextant/internal/histogram"
	"github.com/sextant-crawler/sextant/internal/netguard"
)

// resolveTarget is a parsed Options.Resolve value.
type resolveTarget struct {
	addr netip.Addr
	port string // "" keeps the URL's port
}

func parseResolveTarget(v string) (resolveTarget, error) {
	if a, err := netip.ParseAddr(v); err == nil {
		return resolveTarget{addr: a}, nil
	}
	ap, err := netip.ParseAddrPort(v)
	if err != nil {
		return resolveTarget{}, fmt.Errorf("want ip or ip:port, got %q", v)
	}
	return resolveTarget{addr: ap.Addr(), port: strconv.Itoa(int(ap.Port()))}, nil
}

// dnsCache caches lookups for a TTL; concurrent lookups of one name share a
// single query. Failures are not cached. Safe for concurrent use.
type dnsCache struct {
	lookup  ResolveFunc
	ttl     time.Duration
	timeout time.Duration // per lookup
	now     func() time.Time
	group   singleflight.Group
	mu      struct {
		sync.Mutex
		m map[string]dnsEntry
	}
	hits, misses counter
	took         *histogram.Histogram // each query's time, if set
}

type dnsEntry struct {
	addrs   []netip.Addr
	expires time.Time
}

// maxDNSEntries bounds the cache; when full, expired entries are swept and,
// if none expired, the map is cleared (a cheap bound, not an LRU).
const maxDNSEntries = 1 << 16

func newDNSCache(lookup ResolveFunc, ttl, timeout time.Duration, now func() time.Time) *dnsCache {
	c := &dnsCache{lookup: lookup, ttl: ttl, timeout: timeout, now: now}
	c.mu.m = make(map[string]dnsEntry)
	return c
}

func (c *dnsCache) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	host = strings.ToLower(host)
	c.mu.Lock()
	e, ok := c.mu.m[host]
	c.mu.Unlock()
	if ok && c.now().Before(e.expires) {
		c.hits.add(1)
		return e.addrs, nil
	}
	c.misses.add(1)
	v, err, _ := c.group.Do(host, func() (any, error) {
		// Shared by every waiter: not cancelled with the first caller.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
		defer cancel()
		t0 := time.Now()
		addrs, err := c.lookup(lctx, host)
		if c.took != nil {
			c.took.Observe(time.Since(t0))
		}
		if err != nil {
			var de *net.DNSError
			if !errors.As(err, &de) {
				// A Resolver override may fail with a bare error: make it
				// a DNSError so that the failure is classified as DNS
				// (and a lookup past its deadline as a DNS timeout).
				err = &net.DNSError{Err: err.Error(), Name: host, UnwrapErr: err,
					IsTimeout: errors.Is(err, context.DeadlineExceeded)}
			}
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
		c.store(host, addrs)
		return addrs, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]netip.Addr), nil
}

func (c *dnsCache) store(host string, addrs []netip.Addr) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.m) >= maxDNSEntries {
		for k, e := range c.mu.m {
			if !now.Before(e.expires) {
				delete(c.mu.m, k)
			}
		}
		if len(c.mu.m) >= maxDNSEntries {
			clear(c.mu.m)
		}
	}
	c.mu.m[host] = dnsEntry{addrs: addrs, expires: now.Add(c.ttl)}
}

func systemLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// dialer is the transport's DialContext: resolution (Resolve map, resolver,
// DNS cache), then the private-address guard on every candidate address,
// then the dial. With a DialContext override, the guard checks the remote
// address of the connection the override returns.
type dialer struct {
	opts    *Options
	dns     *dnsCache
	net     net.Dialer
	resolve map[string]resolveTarget
	open    atomic.Int64 // connections dialled and not yet closed
	h2open  atomic.Int64 // of them, those that carry HTTP/2 (markH2)
}

// countedConn counts itself out of dialer.open (and h2open) when closed.
type countedConn struct {
	net.Conn
	state atomic.Int32 // connOpen, connH2 or connClosed
	d     *dialer
}

const (
	connOpen int32 = iota
	connH2
	connClosed
)

func (c *countedConn) Close() error {
	switch c.state.Swap(connClosed) {
	case connOpen:
		c.d.open.Add(-1)
	case connH2:
		c.d.open.Add(-1)
		c.d.h2open.Add(-1)
	}
	return c.Conn.Close()
}

func (d *dialer) counted(c net.Conn) net.Conn {
	d.open.Add(1)
	return &countedConn{Conn: c, d: d}
}

// markH2 counts c in dialer.h2open if it is a TLS connection that
// negotiated HTTP/2 on a connection this dialer made (once per connection).
func markH2(c net.Conn) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return
	}
	cc, ok := tc.NetConn().(*countedConn)
	if !ok || tc.ConnectionState().NegotiatedProtocol != "h2" {
		return
	}
	if cc.state.CompareAndSwap(connOpen, connH2) {
		cc.d.h2open.Add(1)
	}
}

func newDialer(o *Options) *dialer {
	lookup := o.Resolver
	if lookup == nil {
		lookup = systemLookup
	}
	d := &dialer{opts: o, dns: newDNSCache(lookup, o.DNSCacheTTL, o.DialTimeout, o.Now),
		net: net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}}
	d.resolve = make(map[string]resolveTarget, len(o.Resolve))
	for k, v := range o.Resolve {
		t, _ := parseResolveTarget(v) // Validate checked it
		d.resolve[strings.ToLower(strings.TrimSuffix(k, "."))] = t
	}
	return d
}

// lookupStatic finds host or its closest parent domain in the Resolve map.
func (d *dialer) lookupStatic(host string) (resolveTarget, bool) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	for {
		if t, ok := d.resolve[h]; ok {
			return t, true
		}
		i := strings.IndexByte(h, '.')
		if i < 0 {
			return resolveTarget{}, false
		}
		h = h[i+1:]
	}
}

func (d *dialer) guard(a netip.Addr) error {
	if d.opts.AllowPrivate {
		return nil
	}
	return netguard.Check(a)
}

func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	var err error
	if d.opts.DialContext != nil {
		c, err = d.dialOverride(ctx, network, addr)
	} else {
		c, err = d.dial(ctx, network, addr)
	}
	if err != nil {
		return nil, err
	}
	return d.counted(c), nil
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, port, err := d.addrs(ctx, host, port)
	if err != nil {
		return nil, err
	}
	// The proxy of a proxied request is the operator's, allowed on
	// loopback or a private network; the guard judged its target already
	// (Fetcher.viaProxy). Only a connection to that proxy's host:port, for
	// a request that chose it, skips the guard.
	proxy := isProxyDial(ctx, addr)
	var errs []error
	for _, a := range addrs {
		if err := d.guard(a); err != nil && !proxy {
			errs = append(errs, fmt.Errorf("%s: %w", host, err))
			continue
		}
		c, err := d.net.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return quickAck(c), nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// loopbackAddrs are what "localhost" names (RFC 6761 §6.3).
var loopbackAddrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}

// addrs returns the candidate addresses of host and the port to dial: an
// IP literal in any notation (never sent to DNS: "0x7f.1" is 127.0.0.1 to
// a C resolver), the Resolve map, localhost, else the resolver.
func (d *dialer) addrs(ctx context.Context, host, port string) ([]netip.Addr, string, error) {
	if a, ok, err := netguard.ParseHost(host); err != nil || ok {
		return []netip.Addr{a}, port, err
	}
	if t, ok := d.lookupStatic(host); ok {
		if t.port != "" {
			port = t.port
		}
		return []netip.Addr{t.addr}, port, nil
	}
	if netguard.IsLocalhost(host) {
		return loopbackAddrs, port, nil
	}
	addrs, err := d.dns.resolve(ctx, host)
	return addrs, port, err
}

func (d *dialer) dialOverride(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.opts.DialContext(ctx, network, addr)
	if err != nil || d.opts.AllowPrivate || isProxyDial(ctx, addr) {
		return c, err
	}
	ra := c.RemoteAddr()
	ap, perr := netip.ParseAddrPort(ra.String())
	if perr != nil {
		c.Close()
		return nil, fmt.Errorf("%w: cannot judge remote address %q of %s", ErrPrivateAddress, ra, addr)
	}
	if err := netguard.Check(ap.Addr()); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	return c, nil
}
