package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/coord"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// etcdFlags are `crawler node`'s etcd flags; they override the config's
// "etcd" object.
type etcdFlags struct {
	endpoints, ca, cert, key *string
	ttl, election            *time.Duration
}

func addEtcdFlags(f *flags) etcdFlags {
	return etcdFlags{
		endpoints: f.String("etcd", "", "comma-separated etcd endpoints (https://host:port): fence the node on etcd's leases and view (issue 25)"),
		ca:        f.String("etcd-ca", "", "CA file for etcd (default the node's tls.ca)"),
		cert:      f.String("etcd-cert", "", "client certificate for etcd, CN = etcd user (default the node's tls.cert)"),
		key:       f.String("etcd-key", "", "client key for etcd (default the node's tls.key)"),
		ttl:       f.Duration("etcd-ttl", 0, "etcd lease TTL, whole seconds (default 5s): a node cut off from etcd stops fetching within it"),
		election:  f.Duration("etcd-election-timeout", 0, "the etcd cluster's election timeout (default 1s): the TTL must outlast a leader election (TTL ≳ 3× this)"),
	}
}

// apply sets the flags given into cfg.Etcd.
func (ef etcdFlags) apply(cfg *nodeconfig.Config) error {
	if *ef.endpoints == "" && *ef.ca == "" && *ef.cert == "" && *ef.key == "" && *ef.ttl == 0 && *ef.election == 0 {
		return nil
	}
	if cfg.Etcd == nil {
		cfg.Etcd = &nodeconfig.Etcd{}
	}
	if *ef.endpoints != "" {
		cfg.Etcd.Endpoints = strings.Split(*ef.endpoints, ",")
	}
	for _, p := range []struct{ dst, src *string }{{&cfg.Etcd.TLS.CA, ef.ca}, {&cfg.Etcd.TLS.Cert, ef.cert}, {&cfg.Etcd.TLS.Key, ef.key}} {
		if *p.src != "" {
			*p.dst = *p.src
		}
	}
	if *ef.ttl != 0 {
		d := nodeconfig.Duration(*ef.ttl)
		cfg.Etcd.TTL = &d
	}
	if *ef.election != 0 {
		d := nodeconfig.Duration(*ef.election)
		cfg.Etcd.ElectionTimeout = &d
	}
	return cfg.Validate()
}

// etcdClientTLS is a client identity for etcd: the certificate, and etcd's
// servers verified against the CA (they are not cluster members).
func etcdClientTLS(t nodeconfig.TLS) (*tls.Config, error) {
	n, err := tlsutil.Load(t.CA, t.Cert, t.Key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{n.Cert}, RootCAs: n.Pool}, nil
}

// openEtcdSession opens the node's session when cfg.Etcd is set (nil, nil
// otherwise). The node's configured view is stored as the cluster's if
// etcd has none and the node may write it (no RBAC yet).
func openEtcdSession(ctx context.Context, cfg *nodeconfig.Config, logger *slog.Logger) (*coord.Session, error) {
	if cfg.Etcd == nil {
		return nil, nil
	}
	tc, err := etcdClientTLS(cfg.EtcdTLS())
	if err != nil {
		return nil, err
	}
	o := coord.Options{Endpoints: cfg.Etcd.Endpoints, TLS: tc, Cluster: cfg.Etcd.Cluster, Logger: logger}
	if cfg.Etcd.TTL != nil {
		o.TTL = time.Duration(*cfg.Etcd.TTL)
	}
	if cfg.Etcd.ElectionTimeout != nil {
		o.ElectionTimeout = time.Duration(*cfg.Etcd.ElectionTimeout)
	}
	v := hostsplit.View{Epoch: max(cfg.Epoch, 1)}
	for _, m := range cfg.Members {
		v.Members = append(v.Members, hostsplit.Member{ID: hostsplit.NodeID(m.ID), Addr: m.Addr})
	}
	if !cfg.Join {
		// Stored by the session's renewal rounds once etcd answers: the
		// nodes may start before etcd has a quorum (compose, Kubernetes).
		o.InitView = &v
	}
	s, err := coord.NewSession(o, hostsplit.NodeID(cfg.ID))
	if err != nil {
		return nil, err
	}
	return s, nil
}
