package main

import (
	"context"
	"fmt"
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
overwrite an existing ca.pem.`)
	nodes := f.Int("nodes", 3, "number of nodes (ids node-0 ... node-<N-1>)")
	out := f.String("out", "", "output directory (required)")
	hosts := f.String("hosts", "127.0.0.1,localhost", "comma-separated extra host names and IPs for every node certificate")
	validity := f.Duration("validity", 365*24*time.Hour, "certificate lifetime")
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
	if err := tlsutil.WriteCluster(*out, ids, hs, *validity); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "wrote a cluster CA and %d node certificates to %s\n", *nodes, *out)
	return nil
}
