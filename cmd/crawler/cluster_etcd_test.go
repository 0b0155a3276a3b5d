package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/coord"
	"github.com/sextant-crawler/sextant/internal/handoff"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// idleEtcd starts an embedded etcd with the cluster CA of pki and stores
// v as the cluster's view; it returns its endpoint and an operator store.
func idleEtcd(t *testing.T, pki string, v hostsplit.View) (string, *coord.Store) {
	t.Helper()
	ca, err := tlsutil.LoadCA(filepath.Join(pki, "ca.pem"), filepath.Join(pki, "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue("etcd-0", []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e, err := coord.StartEmbedded(coord.EmbedOptions{Dir: t.TempDir(), CAPEM: ca.CertPEM, CertPEM: cert, KeyPEM: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Kill) // nothing to hand over: no graceful 8 s stop
	cf, kf := tlsutil.OperatorFiles(pki, "admin")
	tc, err := etcdClientTLS(nodeconfig.TLS{CA: filepath.Join(pki, "ca.pem"), Cert: cf, Key: kf})
	if err != nil {
		t.Fatal(err)
	}
	st, err := openOperatorStore([]string{e.ClientURL}, "", tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Init(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	return e.ClientURL, st
}

// `cluster add --etcd` of a node at a wrong address records the change in
// etcd and, when it cannot complete, its rollback there: etcd's view stays
// epoch 1 and its change record is aborted.
func TestClusterAddEtcdRollsBack(t *testing.T) {
	pki, all, _ := idleCluster(t, 2)
	ep, st := idleEtcd(t, pki, hostsplit.View{Epoch: 1, Members: all})
	code, out, stderr := runCLI(t, "cluster", "add", "--pki", pki, "--peer", all[0].Addr, "--etcd", ep,
		"--id", "node-2", "--addr", closedAddr(t), "--timeout", "4s")
	if code != 1 || !strings.Contains(stderr, "did not commit by its deadline") {
		t.Fatalf("cluster add --etcd to a wrong address: exit %d:\n%s\n%s", code, out, stderr)
	}
	ctx := context.Background()
	if v, err := st.View(ctx); err != nil || v.Epoch != 1 {
		t.Errorf("etcd's view after the failed add: epoch %d (%v), want 1", v.Epoch, err)
	}
	r, ok, err := st.Current(ctx)
	if err != nil || !ok || r.Phase != handoff.PhaseAborted || r.New.Epoch != 2 {
		t.Errorf("etcd's change record: %+v ok=%v err=%v, want the change to epoch 2 aborted", r, ok, err)
	}
}

// `cluster abort --etcd` aborts a change left open in etcd (its
// coordinator gone), and refuses one that committed there.
func TestClusterAbortEtcd(t *testing.T) {
	pki, all, _ := idleCluster(t, 2)
	v1 := hostsplit.View{Epoch: 1, Members: all}
	ep, st := idleEtcd(t, pki, v1)
	ctx := context.Background()
	r, err := st.Begin(ctx, handoff.Record{ID: "left-open", Old: v1, New: hostsplit.View{Epoch: 2, Members: all[:1]}})
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "cluster", "abort", "--pki", pki, "--peer", all[0].Addr, "--etcd", ep)
	if code != 0 {
		t.Fatalf("abort --etcd: exit %d: %s %s", code, out, stderr)
	}
	if cur, ok, err := st.Current(ctx); err != nil || !ok || cur.ID != r.ID || cur.Phase != handoff.PhaseAborted {
		t.Fatalf("after abort --etcd: %+v ok=%v err=%v, want %s aborted", cur, ok, err, r.ID)
	}
	// A change committed in etcd can only go forward.
	if r, err = st.Begin(ctx, handoff.Record{ID: "committed", Old: v1, New: hostsplit.View{Epoch: 2, Members: all[:1]}}); err != nil {
		t.Fatal(err)
	}
	if _, err = st.Commit(ctx, r); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, "cluster", "abort", "--pki", pki, "--peer", all[0].Addr, "--etcd", ep)
	if code != 1 || !strings.Contains(stderr, "can only go forward") {
		t.Fatalf("abort --etcd of a committed change: exit %d: %s %s", code, out, stderr)
	}
}
