package main

import (
	"crypto/tls"
	"path/filepath"
	"strings"

	"github.com/sextant-crawler/sextant/internal/coord"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// clusterEtcdFlags are `crawler cluster add|remove|abort`'s etcd flags:
// with --etcd the change is recorded in etcd (handoff.Store) as the
// operator, so that nodes fenced on etcd (`crawler node --etcd`) follow it.
type clusterEtcdFlags struct {
	endpoints, cluster, ca, cert, key *string
}

func addClusterEtcdFlags(f *flags) clusterEtcdFlags {
	return clusterEtcdFlags{
		endpoints: f.String("etcd", "", "comma-separated etcd endpoints (https://host:port): record the change in etcd, where 'crawler node --etcd' nodes are fenced (needed whenever the nodes run with --etcd)"),
		cluster:   f.String("etcd-cluster", "", "the cluster's key prefix name in etcd (as the nodes' etcd.cluster; default coord's)"),
		ca:        f.String("etcd-ca", "", "CA file for etcd (default --pki/ca.pem)"),
		cert:      f.String("etcd-cert", "", "client certificate for etcd, CN = etcd user (default the operator's: --pki/operator-NAME.pem)"),
		key:       f.String("etcd-key", "", "client key for etcd (default the operator's: --pki/operator-NAME-key.pem)"),
	}
}

// open connects to etcd as operator as (nil, nil without --etcd). Close
// the store.
func (ef clusterEtcdFlags) open(pki, as string) (*coord.Store, error) {
	if *ef.endpoints == "" {
		return nil, nil
	}
	cert, key := tlsutil.OperatorFiles(pki, as)
	t := nodeconfig.TLS{CA: filepath.Join(pki, "ca.pem"), Cert: cert, Key: key}
	for _, p := range []struct{ dst, src *string }{{&t.CA, ef.ca}, {&t.Cert, ef.cert}, {&t.Key, ef.key}} {
		if *p.src != "" {
			*p.dst = *p.src
		}
	}
	tc, err := etcdClientTLS(t)
	if err != nil {
		return nil, err
	}
	return openOperatorStore(strings.Split(*ef.endpoints, ","), *ef.cluster, tc)
}

func openOperatorStore(endpoints []string, cluster string, tc *tls.Config) (*coord.Store, error) {
	return coord.Open(coord.Options{Endpoints: endpoints, Cluster: cluster, TLS: tc})
}
