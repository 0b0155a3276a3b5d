package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/coord"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// `crawler etcd` serves an etcd member over mTLS that a coord client uses,
// and stops on cancel.
func TestEtcdCommand(t *testing.T) {
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	if err := tlsutil.WriteCluster(pki, []string{"etcd-0", "operator"}, []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	cert, key := tlsutil.NodeFiles(pki, "etcd-0")
	ctx, cancel := context.WithCancel(context.Background())
	var client string
	var errb syncBuf
	var done chan int
	// freeAddr's ports are free when picked, not when etcd binds them:
	// another package's test may take one in between (a CI run failed on
	// "address already in use"), so a start lost that way is retried.
	for attempt := 0; ; attempt++ {
		var out syncBuf
		errb = syncBuf{}
		client, done = freeAddr(t), make(chan int, 1)
		args := []string{"etcd", "--data", filepath.Join(dir, fmt.Sprintf("etcd%d", attempt)), "--client", client, "--peer", freeAddr(t),
			"--ca", filepath.Join(pki, "ca.pem"), "--cert", cert, "--key", key}
		go func() { done <- run(ctx, args, &out, &errb) }()
		code, started := waitServing(&out, done)
		if started {
			break
		}
		if attempt < 2 && strings.Contains(out.String()+errb.String(), "address already in use") {
			continue
		}
		t.Fatalf("crawler etcd exited %d:\n%s%s", code, out.String(), errb.String())
	}
	ocert, okey := tlsutil.NodeFiles(pki, "operator")
	pair, err := tls.LoadX509KeyPair(ocert, okey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(pki, "ca.pem"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	s, err := coord.Open(coord.Options{Endpoints: []string{"https://" + client}, TLS: &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := hostsplit.View{Epoch: 1, Members: []hostsplit.Member{{ID: "node-0", Addr: "127.0.0.1:1"}}}
	if _, err := s.Init(ctx, v); err != nil {
		t.Fatal(err)
	}
	if got, err := s.View(ctx); err != nil || got.Epoch != 1 {
		t.Fatalf("View: %v %v", got, err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("crawler etcd: exit %d\n%s", code, errb.String())
	}
}

// waitServing waits until `crawler etcd` says it is serving (true) or
// exits (false, with its code).
func waitServing(out *syncBuf, done <-chan int) (int, bool) {
	for !strings.Contains(out.String(), "serving") {
		select {
		case code := <-done:
			return code, false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return 0, true
}

// The etcd flags of `crawler node` fill the config's "etcd" object,
// defaulting its TLS to the node's own files, and refuse a TTL etcd cannot
// grant.
func TestNodeEtcdFlags(t *testing.T) {
	load := func() *nodeconfig.Config {
		c, err := nodeconfig.LoadAs(filepath.Join("..", "..", "deploy", "compose", "node.json"), "node-1")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	parse := func(args ...string) (etcdFlags, error) {
		f := newFlags(&cmdEnv{}, "node", "")
		ef := addEtcdFlags(f)
		return ef, f.parse(args)
	}
	ef, err := parse("--etcd", "https://a:2379,https://b:2379", "--etcd-ttl", "3s")
	if err != nil {
		t.Fatal(err)
	}
	c := load()
	if err := ef.apply(c); err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Etcd.Endpoints, " ") != "https://a:2379 https://b:2379" || time.Duration(*c.Etcd.TTL) != 3*time.Second {
		t.Fatalf("etcd config %+v", c.Etcd)
	}
	if got := c.EtcdTLS(); got != c.TLS {
		t.Fatalf("etcd TLS %+v, want the node's %+v", got, c.TLS)
	}
	ef, _ = parse("--etcd", "https://a:2379", "--etcd-election-timeout", "500ms")
	if c = load(); ef.apply(c) != nil || c.Etcd.ElectionTimeout == nil || time.Duration(*c.Etcd.ElectionTimeout) != 500*time.Millisecond {
		t.Fatalf("--etcd-election-timeout 500ms: %+v", c.Etcd)
	}
	ef, _ = parse("--etcd", "https://a:2379", "--etcd-ttl", "1500ms")
	if err := ef.apply(load()); err == nil || !strings.Contains(err.Error(), "whole seconds") {
		t.Fatalf("--etcd-ttl 1500ms: %v", err)
	}
	ef, _ = parse()
	c = load()
	want := fmt.Sprintf("%+v", c.Etcd) // compose's node.json has one
	if err := ef.apply(c); err != nil || fmt.Sprintf("%+v", c.Etcd) != want {
		t.Fatalf("no etcd flags: %v, %+v, want the config's %s", err, c.Etcd, want)
	}
}
