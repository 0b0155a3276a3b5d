package fetcher

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"

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
	// ErrOther: anything else (protocol errors).
	ErrOther = errors.New("fetcher: fetch failed")
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

// classError carries a class sentinel and the cause.
type classError struct {
	class     error
	cause     error
	retryable bool
}

func (e *classError) Error() string   { return e.class.Error() + ": " + e.cause.Error() }
func (e *classError) Unwrap() []error { return []error{e.class, e.cause} }

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
	mk := func(class error, retry bool) error { return &classError{class, err, retry} }
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
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return mk(ErrTimeout, true)
	case errors.As(err, &dnsErr):
		return mk(ErrDNS, !dnsErr.IsNotFound)
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
