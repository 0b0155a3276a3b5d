package tlsutil

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOperatorCertificate(t *testing.T) {
	dir := t.TempDir()
	if err := WriteCluster(dir, []string{"node-0"}, []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := WriteOperator(dir, "alice", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := WriteOperator(dir, "alice", time.Hour); err == nil {
		t.Error("overwrote an operator certificate")
	}
	cf, kf := OperatorFiles(dir, "alice")
	if fi, err := os.Stat(kf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("operator key: %v %v", fi, err)
	}
	op, err := Load(filepath.Join(dir, "ca.pem"), cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(op.Cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if !IsOperator(leaf) {
		t.Fatalf("IsOperator(operator) = false: OU %v EKU %v", leaf.Subject.OrganizationalUnit, leaf.ExtKeyUsage)
	}
	if name, err := OperatorName(leaf); err != nil || name != "alice" {
		t.Errorf("OperatorName = %q, %v", name, err)
	}
	if _, err := ID(leaf); err == nil {
		t.Error("an operator certificate passes as a node id")
	}
	// Client-only: it cannot serve.
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: op.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("an operator certificate verifies for server authentication")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: op.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("operator certificate does not verify as a client: %v", err)
	}
	// A member's certificate is no operator's.
	ncf, nkf := NodeFiles(dir, "node-0")
	node, err := Load(filepath.Join(dir, "ca.pem"), ncf, nkf)
	if err != nil {
		t.Fatal(err)
	}
	nleaf, _ := x509.ParseCertificate(node.Cert.Certificate[0])
	if IsOperator(nleaf) {
		t.Error("IsOperator(member certificate) = true")
	}
	if _, err := OperatorName(nleaf); !errors.Is(err, ErrNotOperator) {
		t.Errorf("OperatorName(member) err = %v", err)
	}
	ca, _ := LoadCA(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem"))
	if _, _, err := ca.IssueOperator("bad name", time.Hour); err == nil {
		t.Error("issued an operator certificate for a name with a space")
	}
}
