package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/memberserve"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// crawler cluster cert / add / show / remove against two in-process
// members with empty frontiers: the views and phases change as told.
func TestClusterAddRemove(t *testing.T) {
	root := t.TempDir()
	pki := filepath.Join(root, "pki")
	all, seats, err := crawl.LoopbackCluster(pki, 2)
	if err != nil {
		t.Fatal(err)
	}
	// The operator identity membership changes need (--as admin, the default).
	if code, out, stderr := runCLI(t, "certs", "--operator", "admin", "--out", pki); code != 0 {
		t.Fatalf("certs --operator: exit %d: %s %s", code, out, stderr)
	}
	// A third id certified afterwards, as an operator adding a node does.
	if code, out, stderr := runCLI(t, "cluster", "cert", "--pki", pki, "--id", "node-7"); code != 0 {
		t.Fatalf("cluster cert: exit %d: %s %s", code, out, stderr)
	}
	cf, kf := tlsutil.NodeFiles(pki, "node-7")
	if _, err := tlsutil.Load(filepath.Join(pki, "ca.pem"), cf, kf); err != nil {
		t.Fatal(err)
	}
	start := func(i int, members []hostsplit.Member, joining bool) *crawl.Member {
		m, err := memberserve.Start(crawl.MemberOptions{
			Node: crawl.Options{DataDir: filepath.Join(root, seats[i].ID), Workers: 1},
			Self: seats[i].ID, Members: members, TLS: seats[i].TLS, Listener: seats[i].Listener, Joining: joining,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	m0 := start(0, all[:1], false)
	m1 := start(1, all, true)
	if p := m1.Phase(); p != crawl.PhaseJoining {
		t.Fatalf("joining node in phase %q", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go m0.Run(ctx)
	go m1.Run(ctx)

	code, out, stderr := runCLI(t, "cluster", "add", "--pki", pki, "--peer", all[0].Addr, "--id", "node-1", "--addr", all[1].Addr, "--timeout", "20s")
	if code != 0 {
		t.Fatalf("cluster add: exit %d: %s %s", code, out, stderr)
	}
	t.Log(out)
	for _, m := range []*crawl.Member{m0, m1} {
		if e, p := m.Split.Ownership().Epoch(), m.Phase(); e != 2 || p != crawl.PhaseRunning {
			t.Errorf("%s after add: epoch %d, phase %q", m.Split.Ownership().View().IDs(), e, p)
		}
	}
	// A re-run of the same add changes nothing and succeeds.
	if code, out, stderr := runCLI(t, "cluster", "add", "--pki", pki, "--peer", all[0].Addr, "--id", "node-1", "--addr", all[1].Addr, "--timeout", "20s"); code != 0 {
		t.Fatalf("cluster add again: exit %d: %s %s", code, out, stderr)
	}
	code, out, _ = runCLI(t, "cluster", "show", "--pki", pki, "--as", "node-1", "--peer", all[1].Addr)
	if code != 0 || !strings.Contains(out, "view epoch 2: 2 members") || strings.Count(out, "running") != 2 {
		t.Errorf("cluster show: exit %d:\n%s", code, out)
	}
	code, out, stderr = runCLI(t, "cluster", "remove", "--pki", pki, "--peer", all[1].Addr, "--id", "node-0")
	if code != 0 {
		t.Fatalf("cluster remove: exit %d: %s %s", code, out, stderr)
	}
	if p := m0.Phase(); p != crawl.PhaseRemoved {
		t.Errorf("node-0 after its removal: phase %q", p)
	}
	if v := m1.Split.Ownership().View(); v.Epoch != 3 || len(v.Members) != 1 || v.Members[0].ID != "node-1" {
		t.Errorf("node-1's view after the removal: %+v", v)
	}
	// Usage errors.
	for _, args := range [][]string{{"cluster"}, {"cluster", "add", "--pki", pki}, {"cluster", "frobnicate", "--pki", pki, "--peer", all[1].Addr, "--as", "node-1"}} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
