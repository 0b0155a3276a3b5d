package main

import (
	"context"
	"fmt"
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
root, e.g. in the image: see deploy/up.sh).`)
	nodes := f.Int("nodes", 3, "number of nodes (ids node-0 ... node-<N-1>)")
	out := f.String("out", "", "output directory (required)")
	hosts := f.String("hosts", "127.0.0.1,localhost", "comma-separated extra host names and IPs for every node certificate")
	perNode := f.Bool("per-node", false, "write each node's files to DIR/<id>/ (mount only that into the node)")
	owner := f.String("owner", "", "with --per-node: chown each node directory to UID:GID (needs privilege)")
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
	fmt.Fprintf(env.stdout, "wrote a cluster CA and %d node certificates to %s\n", *nodes, *out)
	return nil
}
