package main

import (
	"os"
	"path/filepath"
	"syscall"
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

// --per-node gives each node a directory with only its own key (0600).
func TestCertsPerNode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	args := []string{"certs", "--nodes", "2", "--etcd", "1", "--out", dir, "--per-node"}
	if os.Geteuid() == 0 {
		args = append(args, "--owner", "65532:65532")
	}
	code, _, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// --etcd 1 also issues etcd-0's certificate, in its own directory.
	for _, id := range []string{"node-0", "node-1", "etcd-0"} {
		nd := filepath.Join(dir, id)
		cf, kf := tlsutil.NodeFiles(nd, id)
		if _, err := tlsutil.Load(filepath.Join(nd, "ca.pem"), cf, kf); err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(nd)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 3 {
			t.Errorf("%s holds %d files, want ca.pem and its own certificate and key", nd, len(ents))
		}
		fi, err := os.Stat(kf)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", kf, fi.Mode(), err)
		}
		if di, err := os.Stat(nd); err != nil || di.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", nd, di.Mode(), err)
		}
		if os.Geteuid() == 0 {
			if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != 65532 || st.Gid != 65532 {
				t.Errorf("%s not owned by 65532:65532", kf)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, id+"-key.pem")); err == nil {
			t.Errorf("%s's key left in the shared directory", id)
		}
	}
	if code, _, _ := runCLI(t, "certs", "--nodes", "2", "--out", t.TempDir(), "--owner", "1:1"); code != 2 {
		t.Errorf("--owner without --per-node: exit %d, want 2", code)
	}
}
