package killtest

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"testing"
	"time"
)

const childEnv = "KILLTEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "sleep": // until killed
		fmt.Println("ready")
		time.Sleep(time.Hour)
	case "exit3":
		fmt.Fprintln(os.Stderr, "failing")
		os.Exit(3)
	case "sigint": // a graceful stop on SIGINT
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt)
		fmt.Println("ready")
		<-c
		fmt.Println("stopped")
		os.Exit(0)
	}
	os.Exit(2)
}

func TestKill(t *testing.T) {
	c := Start(t, Options{Env: []string{childEnv + "=sleep"}})
	if err := c.Until(30*time.Second, func() bool { return strings.Contains(c.Output(), "ready") }); err != nil {
		t.Fatal(err)
	}
	if c.Killed() {
		t.Error("Killed before the kill")
	}
	if !c.Kill() || !c.Killed() || c.Err() == nil {
		t.Errorf("after Kill: killed %v, err %v", c.Killed(), c.Err())
	}
	if err := c.Until(time.Second, func() bool { return false }); !errors.Is(err, ErrExited) {
		t.Errorf("Until on an exited child: %v", err)
	}
}

func TestExitStatus(t *testing.T) {
	c := Start(t, Options{Env: []string{childEnv + "=exit3"}})
	err := c.Wait(30 * time.Second)
	if err == nil || c.Killed() || !strings.Contains(c.Output(), "failing") {
		t.Errorf("exit 3: err %v, killed %v, output %q", err, c.Killed(), c.Output())
	}
	if c.Kill() {
		t.Error("Kill of an exited child reports a kill")
	}
}

func TestSignalGraceful(t *testing.T) {
	c := Start(t, Options{Env: []string{childEnv + "=sigint"}})
	if err := c.Until(30*time.Second, func() bool { return strings.Contains(c.Output(), "ready") }); err != nil {
		t.Fatal(err)
	}
	if err := c.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(30 * time.Second); err != nil || !strings.HasSuffix(c.Output(), "stopped\n") {
		t.Errorf("SIGINT: %v, output %q", err, c.Output())
	}
}

func TestWaitTimeout(t *testing.T) {
	c := Start(t, Options{Env: []string{childEnv + "=sleep"}})
	if err := c.Wait(200 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("Wait on a sleeping child: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Error("the child still runs after Wait's timeout")
	}
	if err := c.Until(50*time.Millisecond, func() bool { return false }); !errors.Is(err, ErrExited) {
		t.Errorf("Until: %v", err)
	}
}

func TestBinary(t *testing.T) {
	c := Start(t, Options{Binary: "/bin/sh", Args: []string{"-c", "echo hello; exit 0"}})
	if err := c.Wait(30 * time.Second); err != nil || c.Output() != "hello\n" {
		t.Errorf("sh: %v %q", err, c.Output())
	}
}
