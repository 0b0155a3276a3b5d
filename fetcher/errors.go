package fetcher

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/sextant-crawler/sextant/internal/netguard"
)

// Error classes. Every error returned by Fetch wraps exactly one of them
// (test with errors.Is) as well as the underlying cause.
var (
	// ErrBadURL: the URL cannot be fetched (unparsable, not http/https, no host).
	ErrBadURL = errors.New("fetcher: bad url")
	// ErrPrivateAddress: the host resolves to an address the guard refuses.
	ErrPrivateAddress = netguard.ErrPrivateAddress
	// ErrTimeout: dial, TLS, header or whole-fetch deadline passed. Retryable.
	ErrTimeout = errors.New("fetcher: timeout")
	// ErrDNS: the host name could not be resolved. Retryable unless the
	// name does not exist.
	ErrDNS = errors.New("fetcher: dns")
	// ErrConnect: connection refused, reset or closed early. Retryable.
	ErrConnect = errors.New("fetcher: connection failed")
	// ErrEncoding: the body's Content-Encoding is unknown or corrupt.
	ErrEncoding = errors.New("fetcher: bad content encoding")
	// ErrTooManyEncodings: the response stacks more than MaxContentCodings
	// content codings. Returned wrapped in ErrEncoding (its class).
	ErrTooManyEncodings = errors.New("fetcher: too many content codings")
	// ErrCanceled: the caller's context was cancelled. Retryable: the URL
	// was not fetched.
	ErrCanceled = errors.New("fetcher: canceled")
	// ErrLocal: this machine failed, not the server: the temporary file a
	// large body spills to could not be created or written (permissions,
	// full disk). The URL was not fetched; callers must not count it against
	// the host or drop the URL.
	ErrLocal = errors.New("fetcher: local storage")
	// ErrTLS: the TLS handshake failed for a reason other than a timeout
	// (a certificate this crawler does not trust, a handshake alert, a
	// server that does not speak TLS). Not retryable: a certificate or a
	// server configuration does not mend in seconds. The error also wraps
	// one of the TLS kinds below.
	ErrTLS = errors.New("fetcher: tls")
	// ErrOther: anything else (protocol errors).
	ErrOther = errors.New("fetcher: fetch failed")
)

// Kinds of TLS and DNS failure. An error of Fetch (and RobotsRules.Err)
// wraps at most one of them besides its class, so that a log line can name
// the cause and Stats can count it: an untrusted certificate must not read
// as "unreachable".
var (
	// ErrCertUnknownAuthority: the chain does not lead to a trusted root
	// (self-signed, private CA: see Options.TLSConfig's RootCAs). Class ErrTLS.
	ErrCertUnknownAuthority = errors.New("certificate signed by unknown authority")
	// ErrCertHostname: the certificate is not valid for the host name. Class ErrTLS.
	ErrCertHostname = errors.New("certificate not valid for host name")
	// ErrCertExpired: the certificate (or one in its chain) is expired or
	// not yet valid. Class ErrTLS.
	ErrCertExpired = errors.New("certificate expired or not yet valid")
	// ErrCertInvalid: any other certificate verification failure. Class ErrTLS.
	ErrCertInvalid = errors.New("certificate invalid")
	// ErrTLSHandshake: the handshake failed otherwise (an alert from the
	// server, no common version or cipher suite). Class ErrTLS.
	ErrTLSHandshake = errors.New("tls handshake failed")
	// ErrNotTLS: the server answered the handshake with something that is
	// not TLS (plain HTTP on port 443). Class ErrTLS.
	ErrNotTLS = errors.New("server does not speak tls")
	// ErrTLSTimeout: the handshake did not finish within TLSTimeout (or the
	// fetch deadline). Class ErrTimeout, retryable.
	ErrTLSTimeout = errors.New("tls handshake timeout")
	// ErrDNSNotFound: the name does not exist (or has no address). Class
	// ErrDNS, not retryable.
	ErrDNSNotFound = errors.New("no such host")
	// ErrDNSTimeout: the lookup timed out. Class ErrTimeout, retryable.
	ErrDNSTimeout = errors.New("dns timeout")
	// ErrDNSOther: any other lookup failure (server failure, refused).
	// Class ErrDNS, retryable.
	ErrDNSOther = errors.New("dns failure")
)

// RefusedAddr returns the address the private-address guard refused in
// err (an ErrPrivateAddress), if the guard could name one.
func RefusedAddr(err error) (netip.Addr, bool) {
	var re *netguard.RefusedError
	if errors.As(err, &re) {
		return re.Addr, true
	}
	return netip.Addr{}, false
}

// classError carries a class sentinel, the cause and, for TLS and DNS
// failures, a kind sentinel.
type classError struct {
	class     error
	cause     error
	retryable bool
	kind      error // one of the kinds above, or nil
}

func (e *classError) Error() string {
	if e.kind != nil {
		return e.class.Error() + " (" + e.kind.Error() + "): " + e.cause.Error()
	}
	return e.class.Error() + ": " + e.cause.Error()
}

func (e *classError) Unwrap() []error {
	if e.kind != nil {
		return []error{e.class, e.kind, e.cause}
	}
	return []error{e.class, e.cause}
}

// Kind returns the TLS or DNS kind err wraps (ErrCertUnknownAuthority,
// ErrDNSNotFound, ...), or nil.
func Kind(err error) error {
	var ce *classError
	if errors.As(err, &ce) {
		return ce.kind
	}
	return nil
}

// handshakeTrace records what the TLS handshake of a request did, from
// httptrace hooks that may run on the transport's dial goroutine.
type handshakeTrace struct {
	mu      sync.Mutex
	started bool
	done    bool
	err     error // the handshake's error, if it failed
	at      time.Time
}

func (h *handshakeTrace) start() {
	h.mu.Lock()
	h.started, h.at = true, time.Now()
	h.mu.Unlock()
}

// finish records the handshake's end and returns how long it took.
func (h *handshakeTrace) finish(err error) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done, h.err = true, err
	return time.Since(h.at)
}

func (h *handshakeTrace) reset() {
	h.mu.Lock()
	h.started, h.done, h.err, h.at = false, false, nil, time.Time{}
	h.mu.Unlock()
}

// failure returns the handshake's error, if the handshake failed or was
// cut short, and whether it was cut short (started, not done).
func (h *handshakeTrace) failure() (err error, cut bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err, h.started && !h.done
}

// tlsKind names a failed TLS handshake's cause.
func tlsKind(err error) error {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.As(err, &unknown):
		return ErrCertUnknownAuthority
	case errors.As(err, &host):
		return ErrCertHostname
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return ErrCertExpired
	case errors.As(err, &invalid), errors.As(err, &verify):
		return ErrCertInvalid
	case errors.As(err, &record):
		return ErrNotTLS
	case errors.As(err, &alert):
		return ErrTLSHandshake
	}
	return ErrTLSHandshake
}

// dnsKind names a failed lookup's cause.
func dnsKind(e *net.DNSError) error {
	switch {
	case e.IsNotFound:
		return ErrDNSNotFound
	case e.IsTimeout:
		return ErrDNSTimeout
	}
	return ErrDNSOther
}

// classifyHandshake classifies err of a request whose TLS handshake hs
// traced: a failed or cut-short handshake is an ErrTLS (or, timed out,
// ErrTimeout with kind ErrTLSTimeout); anything else goes to classify.
func classifyHandshake(err error, hs *handshakeTrace, parent context.Context) error {
	if err == nil {
		return nil
	}
	herr, cut := hs.failure()
	if parent.Err() == nil && (herr != nil || cut) {
		var netErr net.Error
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout() ||
			herr != nil && errors.As(herr, &netErr) && netErr.Timeout() {
			return &classError{ErrTimeout, err, true, ErrTLSTimeout}
		}
		if herr != nil {
			return &classError{ErrTLS, err, false, tlsKind(herr)}
		}
	}
	return classify(err, parent)
}

// IsRetryable reports whether a later attempt at the same URL may succeed:
// timeouts, connection failures, temporary DNS failures and cancellation.
// Refused addresses, bad URLs and bad encodings are permanent.
func IsRetryable(err error) bool {
	var ce *classError
	if errors.As(err, &ce) {
		return ce.retryable
	}
	return false
}

// classify wraps err in its class. fetchCtx is the per-fetch context (with
// the whole-fetch deadline), parent the caller's.
func classify(err error, parent context.Context) error {
	if err == nil {
		return nil
	}
	var ce *classError
	if errors.As(err, &ce) {
		return err
	}
	mk := func(class error, retry bool) error { return &classError{class, err, retry, nil} }
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, ErrLocal):
		return mk(ErrLocal, true)
	case errors.Is(err, netguard.ErrInvalidHost):
		return mk(ErrBadURL, false)
	case errors.Is(err, ErrPrivateAddress):
		return mk(ErrPrivateAddress, false)
	case errors.Is(err, ErrEncoding):
		return mk(ErrEncoding, false)
	case parent.Err() != nil && errors.Is(parent.Err(), context.Canceled):
		return mk(ErrCanceled, true)
	case errors.As(err, &dnsErr):
		// Before the timeout case: a DNS timeout is a timeout (its class,
		// as before) of kind ErrDNSTimeout.
		kind := dnsKind(dnsErr)
		if kind == ErrDNSTimeout {
			return &classError{ErrTimeout, err, true, kind}
		}
		return &classError{ErrDNS, err, kind != ErrDNSNotFound, kind}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return mk(ErrTimeout, true)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.EHOSTUNREACH), isEOF(err):
		return mk(ErrConnect, true)
	case errors.Is(err, context.Canceled):
		return mk(ErrCanceled, true)
	}
	return mk(ErrOther, false)
}

func isEOF(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &opErr)
}
