package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartWritesOutputAndExitStatus(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	p, err := Start(exec.Command("sh", "-c", "echo hi; echo err >&2; exit 3"), out)
	if err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := p.Err(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("exit error %v, want status 3", err)
	}
	if !p.Exited() {
		t.Error("not Exited after Err returned")
	}
	if b, _ := os.ReadFile(out); string(b) != "hi\nerr\n" {
		t.Errorf("output %q", b)
	}
	if err := p.Stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Errorf("Stop of an exited process: %v", err)
	}
}

// TestStopSignal: a process that exits on the signal is not killed.
func TestStopSignal(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	p, err := Start(exec.Command("sh", "-c", `trap 'exit 0' TERM; : > "$1"; while :; do sleep 1; done`, "sh", ready), "")
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, ready)
	if err := p.Stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Errorf("Stop: %v, want nil", err)
	}
	if err := p.Err(); err != nil {
		t.Errorf("exit: %v, want status 0", err)
	}
}

// TestStopKillsGroup: a process that ignores the signal is killed after
// the grace period, and so is the child it spawned (its process group).
func TestStopKillsGroup(t *testing.T) {
	pidf := filepath.Join(t.TempDir(), "child")
	p, err := Start(exec.Command("sh", "-c", `trap '' TERM; sleep 1000 & echo $! > "$1.tmp"; mv "$1.tmp" "$1"; wait`, "sh", pidf), "")
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, pidf)
	b, _ := os.ReadFile(pidf)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(syscall.SIGTERM, 50*time.Millisecond); !errors.Is(err, ErrKilled) {
		t.Errorf("Stop: %v, want ErrKilled", err)
	}
	// The child was SIGKILLed with its group: gone, or a zombie until its
	// new parent reaps it.
	for i := 0; ; i++ {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if i == 1000 {
			t.Fatalf("child %d still running after its group was killed: %s", child, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if i == 3000 {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNetnsCommand(t *testing.T) {
	if bin, args := NetnsCommand("", "echo", "a"); bin != "echo" || strings.Join(args, " ") != "a" {
		t.Errorf("no namespace: %s %q", bin, args)
	}
	if bin, args := NetnsCommand("ns1", "echo", "a"); bin != "ip" || strings.Join(args, " ") != "netns exec ns1 echo a" {
		t.Errorf("ns1: %s %q", bin, args)
	}
}

// TestInNetns: a port opened in a namespace (InNetns) is reached from
// inside it only (DialIn). Needs root and iproute2 (CI runs as root).
func TestInNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (ip netns add)")
	}
	ns := fmt.Sprintf("sextant-harness-test-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	if out, err := exec.Command("ip", "-n", ns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	var l net.Listener
	if err := InNetns(ns, func() (err error) { l, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // ends when l is closed
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if c, err := net.DialTimeout("tcp", l.Addr().String(), 2*time.Second); err == nil {
		c.Close()
		t.Errorf("%s inside the namespace reached from outside", l.Addr())
	}
	c, err := DialIn(context.Background(), ns, "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("DialIn: %v", err)
	}
	c.Close()
	if err := InNetns("no-such-namespace-x", func() error { return nil }); !errors.Is(err, ErrNetns) {
		t.Errorf("unknown namespace: %v, want ErrNetns", err)
	}
}
