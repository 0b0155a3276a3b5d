package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/harness"
)

// A node that dies while the others run (as when its port was taken before
// it bound it) ends the wait at once, named with its output, instead of
// leaving node-0 to wait for the run timeout and taking the blame.
func TestWaitTerminatedSeesAnyNodeExit(t *testing.T) {
	dir := t.TempDir()
	nodes := []clusterNode{{id: "node-0", metrics: "127.0.0.1:1"}, {id: "node-1", metrics: "127.0.0.1:1"}, {id: "node-2", metrics: "127.0.0.1:1"}}
	scripts := []string{"sleep 30", "echo 'listen tcp 127.0.0.1:4242: bind: address already in use'; exit 1", "sleep 30"}
	var procs []*proc
	for i, n := range nodes {
		hp, err := harness.Start(exec.Command("sh", "-c", scripts[i]), filepath.Join(dir, n.id+".stdout"))
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, &proc{Proc: hp})
	}
	defer func() {
		for _, p := range procs {
			_ = p.Stop(syscall.SIGKILL, time.Second)
		}
	}()
	start := time.Now()
	err := waitTerminated(context.Background(), options{runTimeout: 20 * time.Second}, dir, nodes, procs)
	if err == nil || !strings.HasPrefix(err.Error(), "node-1 exited") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v, want node-1's exit with its output", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v: the wait did not notice node-1's exit", d)
	}
}
