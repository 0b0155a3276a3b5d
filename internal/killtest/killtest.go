// Package killtest runs a child process for crash tests: a re-execution of
// the test binary (which runs one test function, or is caught by TestMain)
// or a built binary. The parent waits for a condition, kills the child with
// SIGKILL or stops it with a signal, restarts it and reads its output.
//
// One goroutine per child waits for its exit; it is owned by the Child and
// t.Cleanup kills the child and waits for that goroutine, so no test leaves
// a process or a goroutine behind.
package killtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Errors.
var (
	// ErrExited is returned by Until when the child exited before the
	// condition held.
	ErrExited = errors.New("killtest: child exited")
	// ErrTimeout is returned by Until and Wait when time ran out.
	ErrTimeout = errors.New("killtest: timeout")
)

// Options say how to start a child.
type Options struct {
	// Run names the test function the re-executed test binary runs
	// (-test.run=^Run$); empty runs none ("^$"), for a child that TestMain
	// catches. Ignored when Binary is set.
	Run string
	// Binary, if set, is run with Args instead of the test binary.
	Binary string
	Args   []string
	// Env is added to the parent's environment.
	Env []string
	// Tee, if set, also receives the child's stdout and stderr.
	Tee io.Writer
	// Stdin, if set, is the child's standard input.
	Stdin io.Reader
}

// Child is a running or exited child process. Its methods are safe for
// concurrent use.
type Child struct {
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	err  error // Wait's result, set before done is closed
}

// Start starts a child as o says; t.Fatal if it cannot. t.Cleanup kills
// it if it still runs and waits for it.
func Start(t testing.TB, o Options) *Child {
	t.Helper()
	c, err := start(o)
	if err != nil {
		t.Fatalf("killtest: start: %v", err)
	}
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

func start(o Options) (*Child, error) {
	name, args := o.Binary, o.Args
	if name == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		run := "^$"
		if o.Run != "" {
			run = "^" + o.Run + "$"
		}
		name, args = exe, append([]string{"-test.run=" + run, "-test.count=1", "-test.timeout=5m"}, o.Args...)
	}
	c := &Child{cmd: exec.Command(name, args...), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), o.Env...)
	c.cmd.Stdin = o.Stdin
	var w io.Writer = &c.out
	if o.Tee != nil {
		w = io.MultiWriter(&c.out, o.Tee)
	}
	c.cmd.Stdout, c.cmd.Stderr = w, w
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// Output returns what the child has written to stdout and stderr so far.
func (c *Child) Output() string { return c.out.String() }

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Done is closed when the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is the child's exit error (nil for exit status 0) once Done is
// closed; before that, nil.
func (c *Child) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Signal sends sig to the child. A child that has exited is not an error.
func (c *Child) Signal(sig os.Signal) error {
	if err := c.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Kill kills the child with SIGKILL and waits for its exit. It reports
// whether the signal killed it (false: it had exited on its own first).
func (c *Child) Kill() bool {
	_ = c.cmd.Process.Kill()
	<-c.done
	return c.Killed()
}

// Killed reports whether the child has exited because of SIGKILL.
func (c *Child) Killed() bool {
	select {
	case <-c.done:
	default:
		return false
	}
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// Wait waits up to timeout for the child to exit and returns its exit
// error. On timeout it sends SIGQUIT (a Go child prints its goroutines),
// then SIGKILL, and returns ErrTimeout with the output.
func (c *Child) Wait(timeout time.Duration) error {
	select {
	case <-c.done:
		return c.err
	case <-time.After(timeout):
	}
	_ = c.Signal(syscall.SIGQUIT)
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
		c.Kill()
	}
	return fmt.Errorf("%w: child still running after %v; output:\n%s", ErrTimeout, timeout, c.Output())
}

// Until checks cond every 10 ms until it holds (nil), the child exits
// first (ErrExited, after a last check of cond) or timeout passes
// (ErrTimeout; the child keeps running).
func (c *Child) Until(timeout time.Duration, cond func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-c.done:
			if cond() {
				return nil
			}
			return ErrExited
		case <-deadline.C:
			return fmt.Errorf("%w after %v", ErrTimeout, timeout)
		case <-tick.C:
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
