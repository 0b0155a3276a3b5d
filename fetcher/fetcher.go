package fetcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sextant-crawler/sextant/internal/netguard"
)

// Fetcher downloads URLs. It is safe for concurrent use by many workers and
// must be closed to release idle connections.
type Fetcher struct {
	opts     Options
	dialer   *dialer
	tr       *http.Transport
	robots   *robotsCache
	stats    stats
	inFlight atomic.Int64 // requests in get
}

// New returns a Fetcher configured by a copy of opts.
func New(opts Options) (*Fetcher, error) {
	o := opts
	if o.Resolve != nil {
		o.Resolve = make(map[string]string, len(opts.Resolve))
		for k, v := range opts.Resolve {
			o.Resolve[k] = v
		}
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	// Bodies above MemThreshold spill to TempDir: find out now, not at the
	// first large page, if that cannot work.
	probe, err := os.CreateTemp(o.TempDir, "sextant-probe-*")
	if err != nil {
		return nil, fmt.Errorf("%w: TempDir %q is not writable: %w", ErrLocal, o.TempDir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	if o.TLSConfig != nil {
		o.TLSConfig = o.TLSConfig.Clone()
	} else {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if o.TLSConfig.ClientSessionCache == nil && o.TLSSessionCacheSize > 0 {
		// Resumption skips the certificate exchange and its verification
		// on the next connection to a host (after the idle connection was
		// closed, often: a host's delay can exceed IdleConnTimeout). The
		// LRU bounds the memory: one ticket per host name.
		o.TLSConfig.ClientSessionCache = tls.NewLRUClientSessionCache(o.TLSSessionCacheSize)
	}
	f := &Fetcher{opts: o}
	f.stats.lat = newLatencies()
	f.dialer = newDialer(&f.opts)
	f.dialer.dns.took = f.stats.lat.dns
	f.tr = &http.Transport{
		// Only Options.Proxy, never the environment behind the caller's
		// back; the proxy of a request is chosen (and its target checked by
		// the guard) in get, which passes it down in the context.
		Proxy:                  proxyOf,
		DialContext:            f.dialer.DialContext,
		TLSHandshakeTimeout:    o.TLSTimeout,
		TLSClientConfig:        o.TLSConfig,
		ResponseHeaderTimeout:  o.HeaderTimeout,
		MaxIdleConns:           o.MaxIdleConns,
		MaxIdleConnsPerHost:    o.MaxIdleConnsPerHost,
		IdleConnTimeout:        o.IdleConnTimeout,
		DisableCompression:     true, // we send Accept-Encoding and decode with caps ourselves
		MaxResponseHeaderBytes: 256 << 10,
		// HTTP/2 is offered by ALPN (a custom DialContext turns it off
		// unless forced). The header cap, compression setting, header
		// timeout and idle timeout above apply to h2 connections too, and
		// the guard judged the address when the connection was dialled.
		// One h2 connection per host carries its requests one after the
		// other, since the frontier gives a host one request at a time:
		// multiplexing adds no parallel streams, and a host holds one
		// connection instead of up to MaxIdleConnsPerHost. MaxIdleConns
		// does not reach the h2 pool: see boundIdle.
		ForceAttemptHTTP2: !o.DisableHTTP2,
		HTTP2: &http.HTTP2Config{
			// A reused h2 connection carries every request to its host: a
			// dead one (a silent NAT drop) must be noticed by a ping, not
			// by each request's FetchTimeout in turn.
			SendPingTimeout: 30 * time.Second,
			PingTimeout:     15 * time.Second,
			// Index no request header: a crawler never asks a connection
			// for the same path twice, so each request's :path only
			// evicted the last ones from both sides' HPACK tables
			// (docs/bench/onehost.md, "HPACK indexing off"). The repeated
			// headers are sent literally instead: some 150 bytes per
			// request.
			MaxEncoderHeaderTableSize: 1,
		},
	}
	if o.DisableHTTP2 {
		// ForceAttemptHTTP2 false is not enough with a TLSClientConfig
		// whose NextProtos might list h2: say HTTP/1.1 only.
		f.tr.Protocols = new(http.Protocols)
		f.tr.Protocols.SetHTTP1(true)
	}
	f.robots = newRobotsCache(o.RobotsCacheSize)
	return f, nil
}

// boundIdle keeps the HTTP/2 connections within MaxIdleConns. The
// transport bounds its HTTP/1.1 pool itself (closing the least recently
// used), but HTTP/2 connections live in the h2 pool, which only
// IdleConnTimeout bounds: a crawl touching thousands of h2 hosts a minute
// would hold a connection (a descriptor and its buffers) for each. When
// more h2 connections are open than requests are in flight plus
// MaxIdleConns, the idle connections are closed — all of them, as
// http.Transport can only close idle connections together. That is
// race-free (a connection carrying or reserved for a request is not idle),
// and a host's next connection resumes its TLS session. Only h2
// connections count: counting the HTTP/1.1 pool as well swept every
// connection whenever both pools together passed the cap, so a crawl whose
// active hosts fitted each pool redialled every host again and again
// (docs/bench/https.md). After a sweep the count starts again near zero,
// so sweeps are MaxIdleConns new h2 connections apart.
func (f *Fetcher) boundIdle() {
	if f.dialer.h2open.Load()-f.inFlight.Load() > int64(f.opts.MaxIdleConns) {
		f.tr.CloseIdleConnections()
		f.stats.idleSweeps.add(1)
	}
}

// Close releases idle connections. In-flight fetches are not interrupted;
// cancel their contexts first.
func (f *Fetcher) Close() error {
	f.tr.CloseIdleConnections()
	return nil
}

// Response is a fetched resource. The caller must Close it.
type Response struct {
	URL    string      // the URL requested
	Status int         // HTTP status code
	Header http.Header // response headers
	// ContentType is the media type, lower-case without parameters
	// ("text/html"). If the server sent none, it is sniffed from the body
	// (http.DetectContentType).
	ContentType string
	// Charset is the charset parameter of Content-Type, lower-case, or "".
	Charset string
	// Location is the redirect target resolved against URL for a 3xx
	// response with a valid Location header, else "". Redirects are never
	// followed: the caller hands Location on as a discovered link.
	Location string
	// Body holds the decoded body (possibly truncated); never nil.
	Body *RewindBuffer
	// Wire holds the body as received (content-encoded, transfer-coding
	// removed) when Options.KeepWire is set and it differs from Body (a
	// Content-Encoding was decoded); nil otherwise. See WireBody.
	Wire *RewindBuffer
	// RequestHeader is the header sent (Host excepted); do not modify it.
	RequestHeader http.Header
	// StatusText is the status line's code and reason ("200 OK").
	StatusText string
	// Duration is the time from the request to the end of the body.
	Duration time.Duration
	// Truncated reports that the body hit BodyCap or DecompressCap.
	Truncated bool
	// Bytes is the number of body bytes read from the network (before
	// decoding); Body.Len() is the decoded length.
	Bytes int64
	// RemoteIP is the address the response came from (for per-IP
	// politeness); invalid if unknown (e.g. a DialContext override whose
	// connections have no IP address). Through a proxy, it is the target's
	// address as this Fetcher resolved it for the guard, or invalid with
	// AllowPrivate (the proxy resolves).
	RemoteIP netip.Addr
	// Proto is the protocol of the response: "HTTP/1.1" or "HTTP/2.0".
	Proto string
	// Proxied reports that the request went through Options.Proxy.
	Proxied bool
	// TTFB is the time from the request to the first byte of the
	// response's header (connection set-up included).
	TTFB time.Duration
}

// Close releases the body (and removes its temporary file). Idempotent.
func (r *Response) Close() error {
	if r == nil || r.Body == nil {
		return nil
	}
	if r.Wire != nil {
		r.Wire.Close()
	}
	return r.Body.Close()
}

// WireBody reads the body as received: Wire if it was kept, else Body
// (which then is the body as received).
func (r *Response) WireBody() *io.SectionReader {
	if r.Wire != nil {
		return r.Wire.NewReader()
	}
	return r.Body.NewReader()
}

// acceptEncoding is what we can decode with caps.
const acceptEncoding = "gzip, br, zstd"

const acceptHeader = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// Fetch downloads rawURL with GET, without following redirects. On error no
// Response is returned and nothing needs closing; the error wraps one class
// sentinel (ErrTimeout, ErrPrivateAddress, ...) — see IsRetryable. A non-2xx
// status is not an error.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Response, error) {
	return f.FetchCapped(ctx, rawURL, f.opts.BodyCap, f.opts.DecompressCap)
}

// FetchCapped is Fetch with its own caps in place of Options.BodyCap and
// DecompressCap, for a resource whose limit is not a page's (a sitemap
// may hold 50 MB whatever BodyCap says). The body still spills to TempDir
// above MemThreshold, so a large cap costs disk, not memory. A cap < 1
// means the Options' one.
func (f *Fetcher) FetchCapped(ctx context.Context, rawURL string, bodyCap, decompressCap int64) (*Response, error) {
	if bodyCap < 1 {
		bodyCap = f.opts.BodyCap
	}
	if decompressCap < 1 {
		decompressCap = f.opts.DecompressCap
	}
	u, err := parseFetchURL(rawURL)
	if err != nil {
		f.stats.eBadURL.add(1)
		return nil, err
	}
	f.stats.fetches.add(1)
	start := time.Now()
	resp, err := f.get(ctx, u, bodyCap, decompressCap)
	f.stats.observe(resp, err, time.Since(start))
	if err != nil {
		f.stats.countErr(err)
		f.opts.Logger.Debug("fetch failed", "url", rawURL, "err", err)
		return nil, err
	}
	resp.URL = rawURL
	f.stats.countStatus(resp.Status)
	return resp, nil
}

func parseFetchURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &classError{ErrBadURL, err, false, nil}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &classError{ErrBadURL, fmt.Errorf("scheme %q not http or https", u.Scheme), false, nil}
	}
	if u.Host == "" {
		return nil, &classError{ErrBadURL, fmt.Errorf("no host in %q", rawURL), false, nil}
	}
	if _, _, err := netguard.ParseHost(u.Hostname()); err != nil {
		return nil, &classError{ErrBadURL, err, false, nil}
	}
	return u, nil
}

// get performs one GET with the whole-fetch deadline and reads the body
// into a RewindBuffer with the given caps.
func (f *Fetcher) get(parent context.Context, u *url.URL, bodyCap, decodeCap int64) (resp *Response, err error) {
	defer func() {
		if err != nil {
			f.stats.countKind(err)
		}
	}()
	f.boundIdle()
	f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, f.opts.FetchTimeout)
	defer cancel()
	var remote netip.Addr
	var proxied bool
	if f.opts.Proxy != nil {
		var err error
		if remote, proxied, ctx, err = f.viaProxy(ctx, u); err != nil {
			return nil, classify(err, parent)
		}
	}
	tr := f.trace(proxied)
	tr.remote = remote
	ok := false
	defer func() { tr.done(ok) }()
	ctx = tr.context(ctx)
	// The transport is called directly: redirects are never followed, so
	// http.Client would only add header copying and cookie plumbing.
	req := (&http.Request{
		Method: http.MethodGet, URL: u, Host: u.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{
			"User-Agent":      {f.opts.UserAgent},
			"Accept-Encoding": {acceptEncoding},
			"Accept":          {acceptHeader},
		},
	}).WithContext(ctx)
	addRequestHeader(parent, req.Header) // reqheader.go
	hr, err := f.tr.RoundTrip(req)
	if err != nil {
		return nil, classifyHandshake(&url.Error{Op: "Get", URL: u.Redacted(), Err: err}, &tr.hs, parent)
	}
	defer hr.Body.Close()
	if hr.ProtoMajor == 2 {
		f.stats.http2.add(1)
	}
	ok = true // a response: the trace's hooks have run
	r := &Response{
		RemoteIP:      tr.remote,
		RequestHeader: req.Header,
		StatusText:    hr.Status,
		Status:        hr.StatusCode,
		Header:        hr.Header,
		Proto:         hr.Proto,
		Proxied:       proxied,
		Body:          NewRewindBuffer(f.opts.MemThreshold, f.opts.TempDir),
	}
	if hr.StatusCode >= 300 && hr.StatusCode < 400 {
		if loc := hr.Header.Get("Location"); loc != "" {
			if t, err := u.Parse(strings.TrimSpace(loc)); err == nil {
				r.Location = t.String()
			}
		}
	}
	if err := f.readBody(r, hr, bodyCap, decodeCap); err != nil {
		r.Close()
		return nil, classify(err, parent)
	}
	r.ContentType, r.Charset = contentType(hr.Header.Get("Content-Type"), r.Body)
	r.Duration = time.Since(start)
	if !tr.firstByte.IsZero() {
		r.TTFB = tr.firstByte.Sub(start)
	}
	return r, nil
}

// readBody copies the wire body, capped at bodyCap, through the decoder for
// its Content-Encoding, capped at decodeCap, into r.Body.
func (f *Fetcher) readBody(r *Response, hr *http.Response, bodyCap, decodeCap int64) error {
	wire := &capReader{r: hr.Body, left: bodyCap}
	defer func() {
		r.Bytes = wire.n
		f.stats.wireBytes.add(wire.n)
	}()
	// Several Content-Encoding lines are one list (RFC 9110 §5.3).
	ce := strings.Join(hr.Header.Values("Content-Encoding"), ",")
	var src io.Reader = wire
	if f.opts.KeepWire && ce != "" && !strings.EqualFold(ce, "identity") {
		r.Wire = NewRewindBuffer(f.opts.MemThreshold, f.opts.TempDir)
		src = io.TeeReader(wire, r.Wire)
	}
	dec, err := newDecoder(ce, src)
	if err != nil {
		switch {
		case errors.Is(err, ErrTooManyEncodings):
			f.stats.tooManyEncodings.add(1)
			return err
		case wire.lastErr != nil:
			return wire.lastErr
		case wire.n == 0 && errors.Is(err, io.EOF): // empty compressed body
			return nil
		case wire.hitCap:
			r.Truncated = true
			f.stats.truncated.add(1)
			return nil
		}
		return err
	}
	defer dec.Close()
	out := &capReader{r: dec, left: decodeCap}
	if ce == "" || strings.EqualFold(ce, "identity") {
		r.Body.sizeHint(min(hr.ContentLength, decodeCap))
	}
	_, err = io.Copy(r.Body, out)
	if r.Wire != nil && err == nil && !out.hitCap {
		// Bytes after the encoded stream (the decoder stops at its end)
		// are part of the body as received.
		_, err = io.Copy(io.Discard, src)
	}
	f.stats.bodyBytes.add(r.Body.Len())
	if r.Body.Spilled() {
		f.stats.spilled.add(1)
	}
	switch {
	case wire.lastErr != nil:
		return wire.lastErr // the network failed (timeout, reset): not a partial success
	case err != nil && wire.hitCap:
		// The compressed stream was cut at BodyCap and its decoder
		// complains about the missing tail: keep what was decoded.
		err = nil
	case err != nil && out.lastErr != nil:
		err = fmt.Errorf("%w: %w", ErrEncoding, err)
	}
	if wire.hitCap || out.hitCap {
		r.Truncated = true
		f.stats.truncated.add(1)
	}
	return err
}

// capReader passes through at most left bytes, then reports EOF and
// whether more bytes were available (hitCap).
type capReader struct {
	r       io.Reader
	left    int64
	n       int64
	hitCap  bool
	lastErr error // last error from r
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if !c.hitCap {
			var one [1]byte
			n, _ := io.ReadFull(c.r, one[:])
			c.hitCap = n > 0
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.left -= int64(n)
	if err != nil && err != io.EOF {
		c.lastErr = err
	}
	return n, err
}

// isReadErr reports whether err came from the network read itself.
func (c *capReader) isReadErr(err error) bool {
	return c.lastErr != nil && errors.Is(err, c.lastErr)
}

// contentType returns the media type and charset of the Content-Type header,
// sniffing the body when the header is absent.
func contentType(header string, body *RewindBuffer) (mediaType, charset string) {
	header = strings.TrimSpace(header)
	if header == "" {
		var head [512]byte
		n, _ := io.ReadFull(body.NewReader(), head[:])
		if n == 0 {
			return "", ""
		}
		header = http.DetectContentType(head[:n])
	}
	mt, params, err := mime.ParseMediaType(header)
	if err != nil {
		// Keep what precedes the first ';' as a best effort.
		mt, _, _ = strings.Cut(header, ";")
		return strings.ToLower(strings.TrimSpace(mt)), ""
	}
	return mt, strings.ToLower(params["charset"])
}
