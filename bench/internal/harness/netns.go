package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNetns is returned when a network namespace cannot be entered (it
// needs root, and the namespace made by `ip netns add`).
var ErrNetns = errors.New("harness: network namespace")

// NetnsCommand returns name and args to run inside the namespace ns made
// by `ip netns add` (`ip netns exec ns name args…`, which also binds
// /etc/netns/ns/* over /etc), or name and args unchanged when ns is "".
func NetnsCommand(ns, name string, args ...string) (string, []string) {
	if ns == "" {
		return name, args
	}
	return "ip", append([]string{"netns", "exec", ns, name}, args...)
}

// InNetns runs f on an OS thread moved into namespace ns (f runs in the
// caller's namespace when ns is ""): sockets f creates belong to ns. The
// thread goes back to the scheduler only if it could be moved back;
// otherwise it exits with its goroutine. InNetns returns when f has.
func InNetns(ns string, f func() error) error {
	if ns == "" {
		return f()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", syscall.Gettid()))
		if err != nil {
			errc <- fmt.Errorf("%w: %w", ErrNetns, err)
			return
		}
		defer self.Close()
		target, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			errc <- fmt.Errorf("%w: %w", ErrNetns, err)
			return
		}
		defer target.Close()
		if err := setns(target); err != nil {
			errc <- err
			return
		}
		err = f()
		if setns(self) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// DialIn dials addr from inside namespace ns (a server listening on that
// namespace's loopback).
func DialIn(ctx context.Context, ns, network, addr string) (c net.Conn, err error) {
	err = InNetns(ns, func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

func setns(f *os.File) error {
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("%w: setns: %w", ErrNetns, err)
	}
	return nil
}
