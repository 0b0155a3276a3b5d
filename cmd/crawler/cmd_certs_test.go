package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

func TestCertsWritesLoadableCluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	code, _, stderr := runCLI(t, "certs", "--nodes", "2", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, id := range []string{"node-0", "node-1"} {
		cf, kf := tlsutil.NodeFiles(dir, id)
		if _, err := tlsutil.Load(filepath.Join(dir, "ca.pem"), cf, kf); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(kf); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", kf, fi.Mode(), err)
		}
	}
	if code, _, _ := runCLI(t, "certs", "--nodes", "2", "--out", dir); code != 1 {
		t.Errorf("second run over the same CA: exit %d, want 1", code)
	}
	if code, _, _ := runCLI(t, "certs", "--nodes", "0", "--out", dir); code != 2 {
		t.Errorf("--nodes 0: exit %d, want 2", code)
	}
	if code, _, _ := runCLI(t, "certs"); code != 2 {
		t.Errorf("no --out: exit %d, want 2", code)
	}
}
