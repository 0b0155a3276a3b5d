package fetcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Defaults of Options.
const (
	DefaultUserAgent           = "Sextant/0.1 (+https://github.com/sextant-crawler/sextant)"
	DefaultRobotsToken         = "sextant"
	DefaultDialTimeout         = 10 * time.Second
	DefaultTLSTimeout          = 10 * time.Second
	DefaultHeaderTimeout       = 30 * time.Second
	DefaultFetchTimeout        = 60 * time.Second
	DefaultBodyCap             = 16 << 20
	DefaultMemThreshold        = 256 << 10
	DefaultDNSCacheTTL         = 5 * time.Minute
	DefaultMaxIdleConnsPerHost = 2
	DefaultMaxIdleConns        = 1024
	DefaultIdleConnTimeout     = 90 * time.Second
	DefaultRobotsCacheTTL      = 24 * time.Hour
	DefaultRobotsCacheSize     = 100_000
	DefaultRobotsMaxBytes      = 500 << 10
	DefaultRobotsErrorTTL      = 10 * time.Minute
	DefaultRobotsAttempts      = 3
	DefaultRobotsRetryDelay    = 5 * time.Second
	DefaultRobotsMaxRedirects  = 5
	DefaultRobotsUnreachable   = 30 * 24 * time.Hour
	DefaultTLSSessionCacheSize = 1024
)

// DialFunc dials a network address, like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// ResolveFunc resolves a host name to IP addresses.
type ResolveFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// Options configure a Fetcher. The zero value of every field means its
// default; New copies the struct, so later changes by the caller have no
// effect.
type Options struct {
	// UserAgent is sent with every request (default DefaultUserAgent; it
	// should carry a contact URL).
	UserAgent string
	// RobotsToken is the product token matched against robots.txt
	// user-agent lines. Letters, '_' and '-' only. Default: the product
	// token of UserAgent (RobotsTokenOf), so that a crawler renamed with
	// UserAgent obeys the rules written for its name (RFC 9309 §2.2.1).
	RobotsToken string

	// DialTimeout bounds one TCP connect (default 10 s).
	DialTimeout time.Duration
	// TLSTimeout bounds the TLS handshake (default 10 s).
	TLSTimeout time.Duration
	// HeaderTimeout bounds the wait for response headers once the request
	// is written (default 30 s).
	HeaderTimeout time.Duration
	// FetchTimeout bounds the whole fetch, body included (default 60 s): a
	// server that stalls mid-body fails with ErrTimeout.
	FetchTimeout time.Duration

	// BodyCap is the most body bytes read from the wire (default 16 MiB,
	// as in the crawl of Broder et al.). Longer bodies are truncated and
	// Response.Truncated is set.
	BodyCap int64
	// DecompressCap is the most decoded bytes kept from a compressed body
	// (default BodyCap), the defence against decompression bombs.
	DecompressCap int64
	// MemThreshold is how many body bytes a RewindBuffer keeps in memory
	// before spilling to a temporary file (default 256 KiB).
	MemThreshold int64
	// TempDir holds spilled bodies (default os.TempDir()). Files are
	// unlinked as soon as they are created, so nothing is left behind even
	// if the process is killed.
	TempDir string

	// AllowPrivate permits connections to loopback, private, link-local
	// (metadata), CGNAT, multicast and unspecified addresses. Off by
	// default; tests and the simweb demo turn it on.
	AllowPrivate bool
	// DialContext, if set, replaces the dialer (simweb supplies one that
	// maps *.sim.test to its loopback listener). The private-address guard
	// still applies to the remote address of the connection it returns.
	DialContext DialFunc
	// Resolve maps a host name, or a domain and all its sub-domains, to a
	// fixed "ip" or "ip:port" (the port, if given, replaces the URL's).
	// Consulted before DNS; never touches the network.
	Resolve map[string]string
	// Resolver, if set, replaces DNS lookups (after Resolve).
	Resolver ResolveFunc
	// TLSConfig, if set, is cloned for HTTPS connections (tests pass the
	// root pool of an httptest TLS server). Default: system roots, TLS 1.2+.
	TLSConfig *tls.Config
	// TLSSessionCacheSize bounds the TLS session tickets kept for
	// resumption, one per host name (LRU, default 1024), unless TLSConfig
	// brings its own ClientSessionCache.
	TLSSessionCacheSize int
	// DisableHTTP2 speaks HTTP/1.1 only. By default HTTP/2 is used when
	// the server offers it by ALPN (https only).
	DisableHTTP2 bool
	// Proxy chooses the proxy of each request (nil: always direct, this
	// package's zero value; a crawl node's default, crawl.DefaultProxy, is
	// ProxyFromEnvironment). https targets are reached by CONNECT. The
	// private-address guard judges the target, not the proxy: see
	// Fetcher.viaProxy. A host in Resolve is always reached directly.
	Proxy ProxyFunc
	// DNSCacheTTL is how long resolved addresses are reused (default 5 min).
	DNSCacheTTL time.Duration

	// MaxIdleConnsPerHost caps kept-alive connections per host (default 2;
	// politeness allows one request in flight per host).
	MaxIdleConnsPerHost int
	// MaxIdleConns caps kept-alive HTTP/1.1 connections, and HTTP/2 ones
	// apart (see Fetcher.boundIdle), each at 1024 by default, or at a
	// quarter of the open-file limit if that is lower. A crawl visits its
	// active hosts in turn, so a cap below their number keeps almost no
	// connection until its host's next turn, and a larger one costs memory
	// on a wide crawl (docs/bench/https.md).
	MaxIdleConns int
	// IdleConnTimeout closes idle connections after this long (default 90 s).
	IdleConnTimeout time.Duration

	// RobotsCacheTTL is how long a fetched robots.txt is used (default and
	// maximum 24 h, RFC 9309 §2.4).
	RobotsCacheTTL time.Duration
	// RobotsCacheSize bounds the robots cache in hosts (LRU, default 100 000).
	RobotsCacheSize int
	// RobotsMaxBytes is the most robots.txt bytes parsed (default 500 KiB,
	// the RFC's minimum).
	RobotsMaxBytes int64
	// RobotsErrorTTL is how long a 5xx or unreachable robots.txt (treated
	// as "disallow all") is cached before the next attempt (default 10 min).
	RobotsErrorTTL time.Duration
	// RobotsAttempts is how many consecutive failed robots.txt fetches (5xx
	// or network) a host gets before its "disallow all" is cached for
	// RobotsErrorTTL (default 3). Before that the rules carry Retry: the
	// caller should hold the URL and try again later — a node that starts
	// before the web server, or a short outage, must not lose a host's
	// URLs. The n-th retry waits RobotsRetryDelay × 2^(n-1) (default 5 s:
	// attempts at 0, 5 and 15 s).
	RobotsAttempts   int
	RobotsRetryDelay time.Duration
	// RobotsMaxRedirects is how many robots.txt redirects are followed
	// (default 5; more is treated as 404, i.e. allow all).
	RobotsMaxRedirects int
	// RobotsHostGate makes a robots.txt redirect to another host (RFC 9309
	// §2.3.1.2: crawlers SHOULD follow redirects, up to 5, across
	// authorities) obey that host's politeness: Robots runs in the slot of
	// the host whose robots.txt it fetches, so each request to another host
	// first takes that host's slot from the gate. When the gate refuses for
	// now, the rules come back as RobotsDeferred (Retry set, Expires the
	// gate's retry time) and the next call resumes at that hop. Crawlers set
	// it (the frontier's Borrow); without it RobotsCrossHostRedirects
	// decides.
	RobotsHostGate HostGate
	// RobotsCrossHostRedirects, without RobotsHostGate, follows a robots.txt
	// redirect to another host inline, outside that host's politeness slot
	// (for callers that keep no politeness state). Without either, such a
	// hop is refused: robots.txt is treated as unavailable (allow all, as
	// for too many redirects), with RobotsRules.RefusedRedirect naming the
	// target so the caller can log it. Hops on the same host (and
	// http↔https of one host name) are always followed inline in the slot;
	// their total time is the dur Robots returns, which the next delay of
	// that host is based on.
	RobotsCrossHostRedirects bool
	// RobotsUnreachable is how long a host's robots.txt may stay unreachable
	// before the RFC's fallback applies: the last good copy if any, else
	// allow all (default 30 days).
	RobotsUnreachable time.Duration

	// KeepWire keeps the body as received (still content-encoded) in
	// Response.Wire beside the decoded Body, for archiving (WARC). It costs
	// a second buffer only for content-encoded responses; off, nothing.
	KeepWire bool
	// OnRobotsResponse, if set, is called with every robots.txt response
	// (each hop of a redirect chain) before it is closed, from the
	// goroutine that asked for the rules; it must not keep the Response.
	OnRobotsResponse func(*Response)

	// Logger receives debug events (default: discard).
	Logger *slog.Logger
	// Now is the clock for caches (default time.Now). Tests fake it.
	Now func() time.Time
}

// EnsureDefaults fills zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	setDefault(&o.UserAgent, DefaultUserAgent)
	setDefault(&o.RobotsToken, RobotsTokenOf(o.UserAgent))
	setDefault(&o.DialTimeout, DefaultDialTimeout)
	setDefault(&o.TLSTimeout, DefaultTLSTimeout)
	setDefault(&o.HeaderTimeout, DefaultHeaderTimeout)
	setDefault(&o.FetchTimeout, DefaultFetchTimeout)
	setDefault(&o.BodyCap, DefaultBodyCap)
	setDefault(&o.DecompressCap, o.BodyCap)
	setDefault(&o.MemThreshold, DefaultMemThreshold)
	setDefault(&o.TempDir, os.TempDir())
	setDefault(&o.DNSCacheTTL, DefaultDNSCacheTTL)
	setDefault(&o.TLSSessionCacheSize, DefaultTLSSessionCacheSize)
	setDefault(&o.MaxIdleConnsPerHost, DefaultMaxIdleConnsPerHost)
	setDefault(&o.MaxIdleConns, defaultMaxIdleConns(openFileLimit()))
	setDefault(&o.IdleConnTimeout, DefaultIdleConnTimeout)
	setDefault(&o.RobotsCacheTTL, DefaultRobotsCacheTTL)
	setDefault(&o.RobotsCacheSize, DefaultRobotsCacheSize)
	setDefault(&o.RobotsMaxBytes, DefaultRobotsMaxBytes)
	setDefault(&o.RobotsErrorTTL, DefaultRobotsErrorTTL)
	setDefault(&o.RobotsAttempts, DefaultRobotsAttempts)
	setDefault(&o.RobotsRetryDelay, DefaultRobotsRetryDelay)
	setDefault(&o.RobotsMaxRedirects, DefaultRobotsMaxRedirects)
	setDefault(&o.RobotsUnreachable, DefaultRobotsUnreachable)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// defaultMaxIdleConns is DefaultMaxIdleConns, or a quarter of the
// open-file limit nofile (0: unknown) if that is lower: idle connections
// must leave descriptors to fetches, the DUE's and frontier's files and
// the peers.
func defaultMaxIdleConns(nofile int) int {
	if nofile > 0 {
		return max(min(DefaultMaxIdleConns, nofile/4), 16)
	}
	return DefaultMaxIdleConns
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// Validate reports every problem with o (after EnsureDefaults).
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("fetcher: "+format, args...))
	}
	if !validToken(o.RobotsToken) {
		bad("RobotsToken %q must be letters, '_' and '-' only", o.RobotsToken)
	}
	// A control character would make net/http refuse every request at
	// send time; refusing it here names the option instead.
	if !httpguts.ValidHeaderFieldValue(o.UserAgent) {
		bad("UserAgent %q: control characters are not allowed in a header", o.UserAgent)
	}
	for name, d := range map[string]time.Duration{
		"DialTimeout": o.DialTimeout, "TLSTimeout": o.TLSTimeout,
		"HeaderTimeout": o.HeaderTimeout, "FetchTimeout": o.FetchTimeout,
		"DNSCacheTTL": o.DNSCacheTTL, "IdleConnTimeout": o.IdleConnTimeout,
		"RobotsCacheTTL": o.RobotsCacheTTL, "RobotsErrorTTL": o.RobotsErrorTTL,
		"RobotsUnreachable": o.RobotsUnreachable, "RobotsRetryDelay": o.RobotsRetryDelay,
	} {
		if d < 0 {
			bad("%s %v is negative", name, d)
		}
	}
	if o.RobotsCacheTTL > 24*time.Hour {
		bad("RobotsCacheTTL %v exceeds RFC 9309's 24 h", o.RobotsCacheTTL)
	}
	for name, n := range map[string]int64{
		"BodyCap": o.BodyCap, "DecompressCap": o.DecompressCap,
		"MemThreshold": o.MemThreshold, "RobotsMaxBytes": o.RobotsMaxBytes,
		"RobotsCacheSize": int64(o.RobotsCacheSize), "MaxIdleConnsPerHost": int64(o.MaxIdleConnsPerHost),
		"MaxIdleConns": int64(o.MaxIdleConns), "RobotsMaxRedirects": int64(o.RobotsMaxRedirects),
		"RobotsAttempts": int64(o.RobotsAttempts), "TLSSessionCacheSize": int64(o.TLSSessionCacheSize),
	} {
		if n < 0 {
			bad("%s %d is negative", name, n)
		}
	}
	for k, v := range o.Resolve {
		if _, err := parseResolveTarget(v); err != nil {
			bad("Resolve[%q]: %v", k, err)
		}
	}
	if st, err := os.Stat(o.TempDir); err != nil || !st.IsDir() {
		bad("TempDir %q is not a directory", o.TempDir)
	}
	return errors.Join(errs...)
}

// validToken reports whether s is a robots.txt product token (RFC 9309
// §2.2.1: "a-zA-Z_-").
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenByte(s[i]) {
			return false
		}
	}
	return true
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-'
}

// RobotsTokenOf returns the robots.txt product token of a User-Agent: its
// first product name ("Sextant/0.1 (+…)" → "sextant"), lower-cased, up to
// the first byte that is not a letter, '_' or '-'; DefaultRobotsToken if
// that leaves nothing.
func RobotsTokenOf(userAgent string) string {
	var b strings.Builder
	for _, c := range strings.TrimSpace(userAgent) {
		switch {
		case c >= 'a' && c <= 'z', c == '_', c == '-':
			b.WriteRune(c)
		case c >= 'A' && c <= 'Z':
			b.WriteRune(c + 'a' - 'A')
		default:
			if b.Len() > 0 {
				return b.String()
			}
			return DefaultRobotsToken
		}
	}
	if b.Len() == 0 {
		return DefaultRobotsToken
	}
	return b.String()
}
