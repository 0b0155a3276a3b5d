package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestChildRSSNotFlooredByParent checks the reason this command exists: a
// large parent (this test, holding 256 MiB) that runs a tiny child through
// rusage must see the child's own small peak RSS, while the direct child
// (rusage itself) inherits the parent's high-water mark on Linux.
func TestChildRSSNotFlooredByParent(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "rusage")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ballast := make([]byte, 256<<20)
	for i := range ballast {
		ballast[i] = byte(i)
	}
	out := filepath.Join(dir, "u.json")
	cmd := exec.Command(bin, "--out", out, "--", "sh", "-c", "exit 3")
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("exit code not passed on: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var u Usage
	if err := json.Unmarshal(b, &u); err != nil {
		t.Fatal(err)
	}
	if u.ExitCode != 3 || u.MaxRSS <= 0 {
		t.Errorf("usage %+v", u)
	}
	if u.MaxRSS > 64<<20 {
		t.Errorf("sh's peak RSS reported as %d MiB: floored by a parent's", u.MaxRSS>>20)
	}
	t.Logf("child peak RSS %d KiB; ballast %d", u.MaxRSS>>10, ballast[len(ballast)-1])
}
