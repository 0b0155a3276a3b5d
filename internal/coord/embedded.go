package coord

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// EmbedOptions configure an in-process etcd member (StartEmbedded).
type EmbedOptions struct {
	// Name of the member (default "etcd-0") and its data directory
	// (required). A directory holding data restarts that member.
	Name, Dir string
	// ClientAddr and PeerAddr are host:port to listen on (loopback).
	// Default: free ports on 127.0.0.1.
	ClientAddr, PeerAddr string
	// ListenClientAddr and ListenPeerAddr, if set, are where the member
	// listens (e.g. 0.0.0.0:2379 in a container) when that differs from
	// the addresses it advertises (ClientAddr, PeerAddr: names its
	// certificate covers).
	ListenClientAddr, ListenPeerAddr string
	// Peers lists every member of a multi-member cluster as
	// name -> peer host:port (this one included); empty: a single member.
	Peers map[string]string
	// CAPEM, CertPEM and KeyPEM are the cluster CA and this member's
	// certificate (its hosts must cover the addresses). Clients and peers
	// must present certificates signed by the CA. Required.
	CAPEM, CertPEM, KeyPEM []byte
	// TickMs and ElectionMs are Raft's heartbeat and election timeouts.
	// Defaults 100 and 1000 (etcd's).
	TickMs, ElectionMs uint
	// ReadyTimeout bounds waiting for the member to serve (with a quorum).
	// Default 30 s; < 0 does not wait.
	ReadyTimeout time.Duration
}

// Embedded is a running in-process etcd member. Close it.
type Embedded struct {
	e          *embed.Etcd
	o          EmbedOptions
	ClientURL  string
	PeerURL    string
	closedOnce bool
	killed     chan struct{} // closed once a Kill's cleanup is done
}

// FreeAddr returns a loopback address with a port free at the time of the
// call (for members whose address must be known before they start).
func FreeAddr() (string, error) {
	a, err := freeAddrs(1)
	if err != nil {
		return "", err
	}
	return a[0], nil
}

// freeAddrs returns n distinct loopback addresses, each free at the time
// of the call: all n listeners are open at once, so no two are the same
// port. A variable so a test can hand out a taken one.
var freeAddrs = func(n int) ([]string, error) {
	var addrs []string
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// pickAttempts bounds StartEmbedded's tries with ports it picked itself.
const pickAttempts = 3

// StartEmbedded starts an etcd member serving clients and peers over mTLS.
//
// A port picked here (ClientAddr or PeerAddr empty) is free when picked
// but may be taken before etcd binds it, by another process or by an
// outgoing connection's ephemeral port; such a start is tried again with
// fresh ports, up to three times in all. Addresses the caller gave are
// never replaced.
func StartEmbedded(o EmbedOptions) (*Embedded, error) {
	if o.Dir == "" || len(o.CAPEM) == 0 || len(o.CertPEM) == 0 || len(o.KeyPEM) == 0 {
		return nil, fmt.Errorf("%w: embedded etcd needs Dir, CAPEM, CertPEM and KeyPEM", ErrInvalidOptions)
	}
	if o.Name == "" {
		o.Name = "etcd-0"
	}
	if o.TickMs == 0 {
		o.TickMs = 100
	}
	if o.ElectionMs == 0 {
		o.ElectionMs = 1000
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 30 * time.Second
	}
	pickClient, pickPeer := o.ClientAddr == "", o.PeerAddr == ""
	n := 0
	for _, pick := range []bool{pickClient, pickPeer} {
		if pick {
			n++
		}
	}
	for attempt := 1; ; attempt++ {
		try := o
		picked, err := freeAddrs(n)
		if err != nil {
			return nil, err
		}
		mine := map[string]bool{}
		for _, p := range picked {
			mine[p] = true
		}
		if pickClient {
			try.ClientAddr, picked = picked[0], picked[1:]
		}
		if pickPeer {
			try.PeerAddr = picked[0]
		}
		m, err := startEmbedded(try)
		var op *net.OpError
		if err == nil || attempt == pickAttempts || !errors.Is(err, syscall.EADDRINUSE) ||
			!errors.As(err, &op) || op.Addr == nil || !mine[op.Addr.String()] {
			return m, err
		}
	}
}

// startEmbedded starts a member with both addresses set.
func startEmbedded(o EmbedOptions) (*Embedded, error) {
	if len(o.Peers) == 0 {
		o.Peers = map[string]string{o.Name: o.PeerAddr}
	}
	tlsDir := filepath.Join(o.Dir, "tls")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		return nil, err
	}
	files := map[string][]byte{"ca.pem": o.CAPEM, "member.pem": o.CertPEM, "member-key.pem": o.KeyPEM}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(tlsDir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	cfg := embed.NewConfig()
	cfg.Name = o.Name
	cfg.Dir = filepath.Join(o.Dir, "data")
	cfg.TickMs, cfg.ElectionMs = o.TickMs, o.ElectionMs
	cu, pu := url.URL{Scheme: "https", Host: o.ClientAddr}, url.URL{Scheme: "https", Host: o.PeerAddr}
	lcu, lpu := cu, pu
	if o.ListenClientAddr != "" {
		lcu.Host = o.ListenClientAddr
	}
	if o.ListenPeerAddr != "" {
		lpu.Host = o.ListenPeerAddr
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{lcu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{lpu}, []url.URL{pu}
	cfg.ListenMetricsUrls = nil
	var ic []string
	for name, addr := range o.Peers {
		ic = append(ic, name+"=https://"+addr)
	}
	cfg.InitialCluster = strings.Join(ic, ",")
	cfg.InitialClusterToken = "sextant"
	for _, ti := range []*struct {
		cert, key, ca *string
		auth          *bool
	}{
		{&cfg.ClientTLSInfo.CertFile, &cfg.ClientTLSInfo.KeyFile, &cfg.ClientTLSInfo.TrustedCAFile, &cfg.ClientTLSInfo.ClientCertAuth},
		{&cfg.PeerTLSInfo.CertFile, &cfg.PeerTLSInfo.KeyFile, &cfg.PeerTLSInfo.TrustedCAFile, &cfg.PeerTLSInfo.ClientCertAuth},
	} {
		*ti.cert, *ti.key, *ti.ca = filepath.Join(tlsDir, "member.pem"), filepath.Join(tlsDir, "member-key.pem"), filepath.Join(tlsDir, "ca.pem")
		*ti.auth = true
	}
	cfg.ClientTLSInfo.ClientCertAuth = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("coord: embedded etcd %s: %w", o.Name, err)
	}
	m := &Embedded{e: e, o: o, ClientURL: cu.String(), PeerURL: pu.String()}
	if o.ReadyTimeout > 0 {
		if err := m.WaitReady(o.ReadyTimeout); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// ErrNotReady: the member did not serve in time (no quorum?).
var ErrNotReady = errors.New("coord: embedded etcd not ready")

// WaitReady waits until the member serves clients (it has a quorum).
func (m *Embedded) WaitReady(d time.Duration) error {
	select {
	case <-m.e.Server.ReadyNotify():
		return nil
	case err := <-m.e.Err():
		return fmt.Errorf("coord: embedded etcd %s: %w", m.o.Name, err)
	case <-time.After(d):
		return fmt.Errorf("%w: %s after %v", ErrNotReady, m.o.Name, d)
	}
}

// Ready is closed once the member serves clients (it has a quorum).
func (m *Embedded) Ready() <-chan struct{} { return m.e.Server.ReadyNotify() }

// Options returns the options the member was started with (defaults and
// chosen addresses filled in): restart it with StartEmbedded(m.Options()).
func (m *Embedded) Options() EmbedOptions { return m.o }

// IsLeader reports whether the member is Raft's leader now.
func (m *Embedded) IsLeader() bool { return m.e.Server.Leader() == m.e.Server.MemberID() }

// Err reports a fatal error of the running member.
func (m *Embedded) Err() <-chan error { return m.e.Err() }

// Close stops the member (its data stays in Dir). Idempotent. It is
// graceful: leadership is handed over and client requests are given
// etcd's request timeout to end (7.5–8.2 s on loopback), so a test of a
// crash uses Kill. After a Kill, Close waits for Kill's cleanup.
func (m *Embedded) Close() {
	if m.killed != nil {
		<-m.killed
	}
	if m.closedOnce {
		return
	}
	m.closedOnce = true
	m.e.Close()
}

// Kill stops the member at once, as a crash would: its listeners are
// closed (no new connection from clients or peers), Raft stops without
// handing leadership over, and requests on open connections fail. The
// rest of the shutdown (closing those connections, freeing Dir and the
// ports) runs in the background; Close waits for it, so restart a killed
// member with m.Close(); StartEmbedded(m.Options()).
func (m *Embedded) Kill() {
	if m.closedOnce {
		return
	}
	m.closedOnce = true
	for _, l := range m.e.Clients {
		l.Close()
	}
	for _, p := range m.e.Peers {
		p.Listener.Close()
	}
	m.e.Server.HardStop()
	m.killed = make(chan struct{})
	go func() {
		defer close(m.killed)
		m.e.Close()
	}()
}

// StartCluster starts len(names) members that form one cluster, each
// member i in dirs[i] with certificate certs[i] (cert and key PEM), and
// waits until all serve. base gives what the members share: CAPEM
// (required), TickMs, ElectionMs, ReadyTimeout.
func StartCluster(base EmbedOptions, names, dirs []string, certs [][2][]byte) ([]*Embedded, error) {
	peers := map[string]string{}
	clients := map[string]string{}
	for _, n := range names {
		var err error
		if peers[n], err = FreeAddr(); err != nil {
			return nil, err
		}
		if clients[n], err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	ms := make([]*Embedded, len(names))
	errs := make([]error, len(names))
	done := make(chan int)
	for i, n := range names {
		go func() {
			o := base
			o.Name, o.Dir, o.ClientAddr, o.PeerAddr, o.Peers = n, dirs[i], clients[n], peers[n], peers
			o.CertPEM, o.KeyPEM = certs[i][0], certs[i][1]
			ms[i], errs[i] = StartEmbedded(o)
			done <- i
		}()
	}
	for range names {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		for _, m := range ms {
			if m != nil {
				m.Close()
			}
		}
		return nil, err
	}
	return ms, nil
}
