package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

func init() {
	register(&command{name: "certs", summary: "make a cluster CA and one mTLS certificate per node", run: runCerts})
}

func runCerts(_ context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "certs", `--nodes N --out DIR [--hosts H,...]

Writes a new cluster CA (ca.pem, ca-key.pem) and, for node ids node-0 ...
node-<N-1>, node-<i>.pem and node-<i>-key.pem into DIR. Keys are written
with mode 0600. Each node certificate names its node id as common name and
DNS name, plus every --hosts entry (IPs and DNS names), and is valid for
both server and client authentication. Nodes accept only peers whose
certificate is signed by this CA and names a cluster member. Refuses to
overwrite an existing ca.pem.

With --per-node each node's files go to DIR/node-<i>/ instead (ca.pem,
node-<i>.pem, node-<i>-key.pem; the directory 0700): mount only that
directory into node i's container. --owner UID:GID then gives each node
directory to the user its container runs as (65532:65532 for the sextant
image), so that the key can stay 0600; chown needs privilege (run it as
root, e.g. in the image: see deploy/up.sh).

--operator NAME (default admin) also issues an operator certificate,
DIR/operator-NAME.pem and operator-NAME-key.pem: client-only, Subject OU
"sextant-operator", CN NAME. Only an operator may change the membership
('crawler cluster add|remove|abort --as NAME'); a node's certificate may
not. On a DIR that already holds the cluster CA, only the operator
certificate is issued (--operator bob adds operator bob). --operator ""
issues none.`)
	nodes := f.Int("nodes", 3, "number of nodes (ids node-0 ... node-<N-1>)")
	out := f.String("out", "", "output directory (required)")
	hosts := f.String("hosts", "127.0.0.1,localhost", "comma-separated extra host names and IPs for every node certificate")
	perNode := f.Bool("per-node", false, "write each node's files to DIR/<id>/ (mount only that into the node)")
	owner := f.String("owner", "", "with --per-node: chown each node directory to UID:GID (needs privilege)")
	etcdN := f.Int("etcd", 0, "also issue certificates for N etcd members etcd-0 ... etcd-<N-1> ('crawler etcd', compose, Kubernetes)")
	validity := f.Duration("validity", 365*24*time.Hour, "certificate lifetime")
	operator := f.String("operator", "admin", "also issue an operator certificate for NAME (membership changes need one); with an existing CA in --out, issue only that")
	if err := f.parse(args); err != nil {
		return err
	}
	if *nodes < 1 || *nodes > 10000 {
		return usagef("--nodes %d: want 1..10000", *nodes)
	}
	if *out == "" {
		return usagef("--out is required")
	}
	if *validity <= 0 {
		return usagef("--validity must be positive")
	}
	if _, err := os.Stat(filepath.Join(*out, "ca.pem")); err == nil && *operator != "" {
		if opCert, _ := tlsutil.OperatorFiles(*out, *operator); fileExists(opCert) {
			return fmt.Errorf("certs: %s holds a cluster CA and %s already", *out, opCert)
		}
		if err := tlsutil.WriteOperator(*out, *operator, *validity); err != nil {
			return err
		}
		c, k := tlsutil.OperatorFiles(*out, *operator)
		fmt.Fprintf(env.stdout, "wrote operator certificate %s and %s (signed by the cluster CA in %s)\n", c, k, *out)
		return nil
	}
	var hs []string
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hs = append(hs, h)
		}
	}
	ids := make([]string, *nodes)
	for i := range ids {
		ids[i] = fmt.Sprintf("node-%d", i)
	}
	for i := range max(*etcdN, 0) {
		ids = append(ids, fmt.Sprintf("etcd-%d", i))
	}
	uid, gid := -1, -1
	if *owner != "" {
		if !*perNode {
			return usagef("--owner needs --per-node")
		}
		u, g, ok := strings.Cut(*owner, ":")
		var err1, err2 error
		uid, err1 = strconv.Atoi(u)
		gid, err2 = strconv.Atoi(g)
		if !ok || err1 != nil || err2 != nil || uid < 0 || gid < 0 {
			return usagef("--owner %q: want UID:GID (numbers)", *owner)
		}
	}
	if err := tlsutil.WriteCluster(*out, ids, hs, *validity); err != nil {
		return err
	}
	if *perNode {
		if err := tlsutil.SplitPerNode(*out, ids, uid, gid); err != nil {
			return err
		}
	}
	if *operator != "" {
		if err := tlsutil.WriteOperator(*out, *operator, *validity); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "wrote operator certificate operator-%s.pem (membership changes: crawler cluster ... --as %s)\n", *operator, *operator)
	}
	fmt.Fprintf(env.stdout, "wrote a cluster CA and %d node certificates to %s\n", *nodes, *out)
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
