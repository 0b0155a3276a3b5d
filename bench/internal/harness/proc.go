// Package harness holds what the benchmark commands (benchall, nodescale)
// share to run their processes: a started process that owns its one Wait
// and is stopped with a signal, then SIGKILL to its process group after a
// grace period (Proc); and network namespaces made with iproute2 — the
// "ip netns exec" prefix of a command run inside one (NetnsCommand) and
// code run on an OS thread moved into one (InNetns, DialIn).
//
// Nothing here sleeps on a schedule or reads a clock but for the grace
// periods and timeouts the caller gives.
package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ErrKilled is returned by Proc.Stop when the process did not exit within
// the grace period and its process group was killed.
var ErrKilled = errors.New("harness: killed after the grace period")

// Proc is a started process. Its one Wait runs in a goroutine Start
// starts; Done is closed when the process has exited and Err is then its
// exit error.
type Proc struct {
	Cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts cmd in its own process group (so that Stop can kill what it
// spawned too). If out is not "", the process's stdout and stderr go to
// that file (created; closed when the process exits).
func Start(cmd *exec.Cmd, out string) (*Proc, error) {
	var f *os.File
	if out != "" {
		var err error
		if f, err = os.Create(out); err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = f, f
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if f != nil {
			f.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error (nil for status 0); valid once Done is
// closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends sig to the process (not its group: a wrapper forwards it),
// waits up to grace for it to exit, then kills its process group with
// SIGKILL and waits. It returns ErrKilled (wrapped) if it had to kill, and
// nil otherwise, whatever the exit status.
func (p *Proc) Stop(sig os.Signal, grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.Cmd.Process.Signal(sig)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return fmt.Errorf("%w (%v): pid %d: %v", ErrKilled, grace, p.Cmd.Process.Pid, p.err)
}
