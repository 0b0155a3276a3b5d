package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestWriteClusterFilesAndLoad(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"node-0", "node-1"}
	if err := WriteCluster(dir, ids, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{
		"ca.pem": 0o644, "ca-key.pem": 0o600, "node-0.pem": 0o644, "node-0-key.pem": 0o600, "node-1-key.pem": 0o600,
	} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}
	if err := WriteCluster(dir, ids, nil, time.Hour); err == nil {
		t.Error("overwrote an existing CA")
	}
	cf, kf := NodeFiles(dir, "node-1")
	n, err := Load(filepath.Join(dir, "ca.pem"), cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(n.Cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if id, err := ID(leaf); err != nil || id != "node-1" {
		t.Errorf("ID = %q, %v", id, err)
	}
	if !slices.Contains(leaf.DNSNames, "localhost") || len(leaf.IPAddresses) != 1 || leaf.IPAddresses[0].String() != "127.0.0.1" {
		t.Errorf("SANs %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: n.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client cert does not verify: %v", err)
	}
	if _, err := LoadCA(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")); err != nil {
		t.Errorf("LoadCA: %v", err)
	}
}

// handshake runs a TLS handshake over an in-memory pipe.
func handshake(t *testing.T, server, client *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	a, b := pipe(t)
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, server)
		err := s.Handshake()
		if err == nil {
			// TLS 1.3 clients learn of a refused certificate on read.
			_, err = s.Write([]byte("x"))
		}
		s.Close()
		done <- err
	}()
	c := tls.Client(b, client)
	clientErr = c.Handshake()
	if clientErr == nil {
		_, clientErr = c.Read(make([]byte, 1))
	}
	c.Close()
	return <-done, clientErr
}

func TestConfigsAcceptOnlyMembersOfTheCluster(t *testing.T) {
	ca, _ := NewCA("ca", time.Hour)
	other, _ := NewCA("other", time.Hour)
	node := func(c *CA, id string) *Node {
		cp, kp, err := c.Issue(id, []string{"127.0.0.1"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		n, err := FromPEM(ca.CertPEM, cp, kp)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	members := []string{"node-0", "node-1"}
	srv := node(ca, "node-0").ServerConfig(members)
	client := func(n *Node) *tls.Config {
		cfg := n.ClientConfig(members)
		cfg.ServerName = "node-0"
		cert := n.Cert
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		return cfg
	}
	if se, ce := handshake(t, srv, client(node(ca, "node-1"))); se != nil || ce != nil {
		t.Fatalf("member refused: server %v, client %v", se, ce)
	}
	se, _ := handshake(t, srv, client(node(ca, "node-7")))
	if !errors.Is(se, ErrNotMember) {
		t.Errorf("non-member: server error %v, want ErrNotMember", se)
	}
	if se, _ := handshake(t, srv, client(node(other, "node-1"))); se == nil {
		t.Error("certificate of another CA accepted")
	}
	// A client refuses a server whose certificate names another node.
	cfg := client(node(ca, "node-1"))
	cfg.ServerName = "node-1"
	if _, ce := handshake(t, srv, cfg); ce == nil {
		t.Error("client accepted a server certificate for the wrong node")
	}
}
