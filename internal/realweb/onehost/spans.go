package onehost

import (
	"context"
	"io"
	"net"
	"sync"
	"time"
)

// spans splits a one-connection-at-a-time exchange's wall time, as the
// client's socket sees it, into the server's part (from a request's first
// written byte to the last byte read before the next request) and the
// client's part (from there to the next request's first byte): where a
// crawl slower than the loop loses its time.
type spans struct {
	mu                sync.Mutex
	server, client    time.Duration
	exchanges         int
	lastWrite, lastRd time.Time
	writing           bool // the last socket operation was a write
	// The client part split at the crawl log line written in between (a
	// crawl only): processing the response (extract, route, log) and
	// the rest (Done, the hand-over to the next worker, Next, the fetch's
	// own set-up).
	lastLog           time.Time
	process, handover time.Duration
}

// logged records a crawl log line.
func (s *spans) logged(now time.Time) {
	s.mu.Lock()
	s.lastLog = now
	s.mu.Unlock()
}

func (s *spans) wrote(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writing {
		return // the same request, written in more than one call
	}
	if !s.lastRd.IsZero() && s.lastRd.After(s.lastWrite) {
		s.server += s.lastRd.Sub(s.lastWrite)
		s.client += now.Sub(s.lastRd)
		s.exchanges++
		if s.lastLog.After(s.lastRd) {
			s.process += s.lastLog.Sub(s.lastRd)
			s.handover += now.Sub(s.lastLog)
		}
	}
	s.lastWrite, s.writing = now, true
}

func (s *spans) read(now time.Time) {
	s.mu.Lock()
	s.lastRd, s.writing = now, false
	s.mu.Unlock()
}

// result returns the totals; the exchange still open at the end counts as
// server time only.
func (s *spans) result() (server, client time.Duration, exchanges int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	server, client, exchanges = s.server, s.client, s.exchanges
	if s.lastRd.After(s.lastWrite) {
		server += s.lastRd.Sub(s.lastWrite)
		exchanges++
	}
	return server, client, exchanges
}

// dialer dials addr whatever the address asked, each connection feeding
// sp (one host, one request at a time: the spans of all connections add
// up without overlapping, except the handshakes).
func (sp *spans) dialer(addr string) func(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &spanConn{Conn: c, sp: sp}, nil
	}
}

type spanConn struct {
	net.Conn
	sp *spans
}

func (c *spanConn) Write(b []byte) (int, error) {
	c.sp.wrote(time.Now())
	return c.Conn.Write(b)
}

func (c *spanConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.sp.read(time.Now())
	}
	return n, err
}

// logWriter timestamps each crawl log write into sp.
type logWriter struct {
	w  io.Writer
	sp *spans
}

func (l logWriter) Write(b []byte) (int, error) {
	n, err := l.w.Write(b)
	l.sp.logged(time.Now())
	return n, err
}
