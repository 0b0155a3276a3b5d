package hostsplit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Kinds of stream failure (FailureKind), for logs, Stats and metric labels.
const (
	FailRefused   = "refused"  // nothing listens at the peer's address
	FailTLS       = "tls"      // handshake failed: unknown CA, wrong name, not a member
	FailTimeout   = "timeout"  // connect or call timed out (a black hole, a partition)
	FailReset     = "reset"    // the connection broke (peer killed, network cut)
	FailDNS       = "dns"      // the peer's address did not resolve
	FailRejected  = "rejected" // the peer refused our batches (malformed, unknown sender)
	FailAborted   = "aborted"  // the peer is on an older membership view (transient)
	FailUnavail   = "unavailable"
	FailOther     = "other"
	noFailureKind = ""
)

// FailureKind classifies a stream or call error to a peer. gRPC flattens
// the transport's error into its status message, so the dial and handshake
// causes are recognised by their text.
func FailureKind(err error) string {
	if err == nil {
		return noFailureKind
	}
	st := status.Convert(err)
	msg := strings.ToLower(st.Message())
	switch {
	case strings.Contains(msg, "connection refused"):
		return FailRefused
	case strings.Contains(msg, "x509:") || strings.Contains(msg, "tls:") ||
		strings.Contains(msg, "authentication handshake failed") || strings.Contains(msg, "not a member"):
		return FailTLS
	case strings.Contains(msg, "no such host") || strings.Contains(msg, "produced zero addresses"):
		return FailDNS
	case strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") ||
		strings.Contains(msg, "eof") || strings.Contains(msg, "connection closed"):
		return FailReset
	case strings.Contains(msg, "i/o timeout") || strings.Contains(msg, "deadline exceeded") ||
		errors.Is(err, context.DeadlineExceeded):
		return FailTimeout
	}
	switch st.Code() {
	case codes.DeadlineExceeded:
		return FailTimeout
	case codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated, codes.ResourceExhausted:
		return FailRejected
	case codes.Aborted:
		return FailAborted
	case codes.Unavailable:
		return FailUnavail
	}
	return FailOther
}

// peerHealth is what a sender knows about reaching its peer: the last
// failure (for Stats and the status page) and the state of its rate-limited
// log. A peer that stays down logs one line per kind of failure, then one
// summary per ErrorLogEvery, and one line when it comes back.
type peerHealth struct {
	mu         sync.Mutex
	lastErr    string
	lastKind   string
	lastErrAt  time.Time
	lastOKAt   time.Time
	failing    bool      // no answer from the peer since the last failure
	loggedKind string    // kind of the last failure logged
	loggedAt   time.Time // when it was logged
	unlogged   int       // failures since then, not logged
	failures   int       // consecutive failures (reset on progress)
}

// failed records a failure to reach p (op: "send" for a batch stream,
// "status" for a status call) and logs it unless the same kind of failure
// was logged less than ErrorLogEvery ago.
func (t *Transport) failed(p *peer, op string, err error, backoff time.Duration) {
	now := t.opts.Clock.Now()
	kind := FailureKind(err)
	cause := status.Convert(err).Message()
	if cause == "" && err != nil {
		cause = err.Error()
	}
	h := &p.l.health
	h.mu.Lock()
	h.lastErr, h.lastKind, h.lastErrAt, h.failing = cause, kind, now, true
	h.failures++
	logIt := kind != h.loggedKind || now.Sub(h.loggedAt) >= t.opts.ErrorLogEvery
	var suppressed, failures int
	if logIt {
		suppressed, failures = h.unlogged, h.failures
		h.loggedKind, h.loggedAt, h.unlogged = kind, now, 0
	} else {
		h.unlogged++
	}
	h.mu.Unlock()
	if logIt {
		args := []any{"peer", p.id, "op", op, "kind", kind, "cause", cause, "consecutive_failures", failures, "not_logged", suppressed}
		if backoff > 0 {
			args = append(args, "backoff", backoff)
		}
		t.opts.Logger.Warn("hostsplit: cannot reach peer; retrying", args...)
	}
}

// progressed records an answer from p (a batch acknowledged, a status
// call answered) and logs the recovery of a peer whose failure was logged.
func (t *Transport) progressed(p *peer) {
	now := t.opts.Clock.Now()
	h := &p.l.health
	h.mu.Lock()
	h.lastOKAt = now
	was, failures, down := h.failing, h.failures, now.Sub(h.lastErrAt)
	h.failing, h.failures, h.loggedKind, h.unlogged = false, 0, "", 0
	h.mu.Unlock()
	if was {
		t.opts.Logger.Info("hostsplit: peer reachable again", "peer", p.id, "after_failures", failures,
			"last_failure_ago", down.Round(time.Millisecond))
	}
}

func (h *peerHealth) fill(ps *PeerStats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps.LastError, ps.LastErrorKind, ps.LastErrorAt, ps.LastAckAt, ps.Failing = h.lastErr, h.lastKind, h.lastErrAt, h.lastOKAt, h.failing
}
