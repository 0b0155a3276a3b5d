package demo

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/coord"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// controlPlane is the demo's etcd (one embedded member over mTLS, signed
// by the cluster CA) and one fencing session per node (issue 25).
type controlPlane struct {
	etcd     *coord.Embedded
	sessions []*coord.Session
}

// startControl starts the embedded etcd in dataDir/etcd, stores the view
// if it has none (a kept data dir keeps its own) and opens each seat's
// session.
func startControl(dataDir string, members []hostsplit.Member, seats []crawl.LoopbackSeat) (*controlPlane, error) {
	pki := filepath.Join(dataDir, "pki")
	ca, err := tlsutil.LoadCA(filepath.Join(pki, "ca.pem"), filepath.Join(pki, "ca-key.pem"))
	if err != nil {
		return nil, err
	}
	cert, key, err := ca.Issue("etcd-0", []string{"127.0.0.1", "localhost"}, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	e, err := coord.StartEmbedded(coord.EmbedOptions{Dir: filepath.Join(dataDir, "etcd"), CAPEM: ca.CertPEM, CertPEM: cert, KeyPEM: key})
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{etcd: e}
	for _, s := range seats {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{s.TLS.Cert}, RootCAs: s.TLS.Pool}
		sess, err := coord.NewSession(coord.Options{Endpoints: []string{e.ClientURL}, TLS: tc}, hostsplit.NodeID(s.ID))
		if err != nil {
			cp.close()
			return nil, err
		}
		cp.sessions = append(cp.sessions, sess)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cp.sessions[0].Store().Init(ctx, hostsplit.View{Epoch: 1, Members: members}); err != nil {
		cp.close()
		return nil, fmt.Errorf("demo: storing the view in etcd: %w", err)
	}
	return cp, nil
}

// control is node i's crawl.Control (nil without a control plane).
func (cp *controlPlane) control(i int) crawl.Control {
	if cp == nil {
		return nil
	}
	return cp.sessions[i]
}

// close closes the sessions (after the members) and stops etcd.
func (cp *controlPlane) close() {
	if cp == nil {
		return
	}
	for _, s := range cp.sessions {
		s.Close()
	}
	cp.etcd.Close()
}
