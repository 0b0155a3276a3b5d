package hostsplit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// logBuf collects JSON log records (safe for concurrent use).
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the records whose message contains msg.
func (b *logBuf) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m, _ := r["msg"].(string); strings.Contains(m, msg) {
			out = append(out, r)
		}
	}
	return out
}

func peerStatsOf(sp *Splitter, id NodeID) PeerStats {
	for _, ps := range sp.Stats().Peers {
		if ps.Peer == id {
			return ps
		}
	}
	return PeerStats{}
}

// A peer that refuses connections, then presents a certificate from an
// unknown CA, then comes back: each kind of failure is logged once with the
// peer and its cause (not once per retry), the last one is in Stats, and
// the recovery is logged.
func TestPeerFailuresLoggedAndInStats(t *testing.T) {
	logs := &logBuf{}
	c := newTestCluster(t, 2, func(o *Options) {
		if o.Self == "node-0" {
			o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		}
	})
	snd, rcv := c.nodes[0], c.nodes[1]
	c.stopServer(rcv) // connections to node-1 are refused
	urls := ownedBy(t, snd.sp.Ownership().Ring(), simURLs(200, 50, 3))[rcv.id]
	if err := snd.sp.Route(context.Background(), urls); err != nil {
		t.Fatal(err)
	}
	if err := snd.sp.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// RetryMax is 200ms: wait for several failed attempts.
	waitFor(t, "5 refused streams", func() bool { return peerStatsOf(snd.sp, rcv.id).StreamErrors >= 5 })
	ps := peerStatsOf(snd.sp, rcv.id)
	if ps.LastErrorKind != FailRefused || !strings.Contains(ps.LastError, "connection refused") || !ps.Failing ||
		ps.LastErrorAt.IsZero() || time.Since(ps.LastErrorAt) > 10*time.Second {
		t.Fatalf("stats after refused connections: kind %q cause %q failing %v at %v", ps.LastErrorKind, ps.LastError, ps.Failing, ps.LastErrorAt)
	}
	recs := logs.records(t, "cannot reach peer")
	if len(recs) != 1 {
		t.Fatalf("%d log records for %d refused streams, want 1 (rate-limited): %v", len(recs), ps.StreamErrors, recs)
	}
	if recs[0]["peer"] != "node-1" || recs[0]["kind"] != FailRefused || !strings.Contains(fmt.Sprint(recs[0]["cause"]), "connection refused") {
		t.Errorf("log record %v", recs[0])
	}

	// The same address now answers with a certificate of another CA.
	evil, err := tlsutil.NewCA("evil-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := evil.Issue("node-1", []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	impostor, err := tlsutil.FromPEM(evil.CertPEM, certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var l net.Listener
	waitFor(t, "the port", func() bool { l, err = net.Listen("tcp", rcv.addr); return err == nil })
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(impostor.ServerConfig(c.ids))))
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	waitFor(t, "a TLS failure", func() bool { return peerStatsOf(snd.sp, rcv.id).LastErrorKind == FailTLS })
	ps = peerStatsOf(snd.sp, rcv.id)
	if !strings.Contains(ps.LastError, "unknown authority") {
		t.Errorf("TLS failure cause %q does not name the unknown CA", ps.LastError)
	}
	waitFor(t, "the TLS failure logged", func() bool { return len(logs.records(t, "cannot reach peer")) == 2 })
	if r := logs.records(t, "cannot reach peer")[1]; r["kind"] != FailTLS || r["peer"] != "node-1" {
		t.Errorf("log record %v", r)
	}
	srv.Stop()
	<-done

	// The real node-1 comes back: the spool drains, the recovery is logged
	// once, and the last error stays visible with Failing cleared.
	c.serve(rcv, nil)
	waitFor(t, "delivery", func() bool { return len(rcv.sink.snapshot()) == len(urls) })
	waitFor(t, "recovery logged", func() bool { return len(logs.records(t, "reachable again")) == 1 })
	ps = peerStatsOf(snd.sp, rcv.id)
	if ps.Failing || ps.LastErrorKind != FailTLS || ps.LastAckAt.Before(ps.LastErrorAt) {
		t.Errorf("after recovery: failing %v kind %q ack %v err %v", ps.Failing, ps.LastErrorKind, ps.LastAckAt, ps.LastErrorAt)
	}
}

func TestFailureKind(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), FailRefused},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"`), FailTLS},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 10.0.0.1:1: i/o timeout"`), FailTimeout},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), FailTimeout},
		{status.Error(codes.Unavailable, "error reading from server: read tcp: connection reset by peer"), FailReset},
		{status.Error(codes.Unavailable, `name resolver error: produced zero addresses`), FailDNS},
		{status.Error(codes.InvalidArgument, "hostsplit: malformed batch"), FailRejected},
		{status.Error(codes.Aborted, "hostsplit: stale view"), FailAborted},
		{status.Error(codes.Unavailable, "something else"), FailUnavail},
		{errors.New("plain"), FailOther},
	} {
		if got := FailureKind(tc.err); got != tc.want {
			t.Errorf("FailureKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A peer that accepts connections and never answers, with nothing to send
// to it: the termination check's status calls time out, and that is
// logged and in Stats too (op "status").
func TestBlackHoledPeerStatusVisible(t *testing.T) {
	logs := &logBuf{}
	c := newTestCluster(t, 2, func(o *Options) {
		o.RPCTimeout = 300 * time.Millisecond
		if o.Self == "node-0" {
			o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		}
	})
	c.stopServer(c.nodes[1])
	var hole net.Listener
	var err error
	waitFor(t, "the port", func() bool { hole, err = net.Listen("tcp", c.nodes[1].addr); return err == nil })
	defer hole.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			conn, err := hole.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()
	defer func() {
		hole.Close()
		for {
			select {
			case conn := <-accepted:
				conn.Close()
			default:
				return
			}
		}
	}()
	if done, err := c.nodes[0].sp.Transport().Terminated(context.Background()); err == nil || done {
		t.Fatalf("Terminated with a black-holed peer: %v %v", done, err)
	}
	ps := peerStatsOf(c.nodes[0].sp, "node-1")
	if ps.LastErrorKind != FailTimeout || !ps.Failing {
		t.Errorf("after a timed-out status call: kind %q cause %q failing %v", ps.LastErrorKind, ps.LastError, ps.Failing)
	}
	recs := logs.records(t, "cannot reach peer")
	if len(recs) != 1 || recs[0]["op"] != "status" || recs[0]["kind"] != FailTimeout {
		t.Errorf("log records %v", recs)
	}
}
