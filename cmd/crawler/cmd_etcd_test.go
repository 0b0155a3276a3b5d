package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/coord"
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
	client, peer := freeAddr(t), freeAddr(t)
	cert, key := tlsutil.NodeFiles(pki, "etcd-0")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuf
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"etcd", "--data", filepath.Join(dir, "etcd"), "--client", client, "--peer", peer,
			"--ca", filepath.Join(pki, "ca.pem"), "--cert", cert, "--key", key}, &out, &errb)
	}()
	ocert, okey := tlsutil.NodeFiles(pki, "operator")
	pair, err := tls.LoadX509KeyPair(ocert, okey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(pki, "ca.pem"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	for !strings.Contains(out.String(), "serving") {
		select {
		case code := <-done:
			t.Fatalf("crawler etcd exited %d:\n%s%s", code, out.String(), errb.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
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
