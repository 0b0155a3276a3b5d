package coord

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestStartEmbeddedRepicksTakenPort: a port StartEmbedded picked and found
// taken when etcd binds it (a CI failure: "bind: address already in use")
// is picked again; an address the caller gave is not replaced.
func TestStartEmbeddedRepicksTakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	orig := freeAddrs
	t.Cleanup(func() { freeAddrs = orig })
	calls, inject := 0, true
	freeAddrs = func(n int) ([]string, error) {
		calls++
		a, err := orig(n)
		if err == nil && inject {
			inject = false
			a[0] = taken.Addr().String()
		}
		return a, err
	}
	p := newPKI(t)
	e := p.embedded("etcd-0")
	if calls != 2 {
		t.Fatalf("freeAddrs called %d times, want 2 (the taken pick, then a fresh one)", calls)
	}
	if e.ClientURL == "https://"+taken.Addr().String() {
		t.Fatalf("member advertises the taken address %s", e.ClientURL)
	}
	s := p.store("operator", e.ClientURL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.cli.Get(ctx, "x"); err != nil {
		t.Fatalf("member on the re-picked port does not serve: %v", err)
	}

	calls = 0
	ck := p.issue("etcd-1")
	_, err = StartEmbedded(EmbedOptions{Name: "etcd-1", Dir: t.TempDir(), CAPEM: p.ca.CertPEM, CertPEM: ck[0], KeyPEM: ck[1],
		ClientAddr: taken.Addr().String()})
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("start on a given taken address: %v, want address in use", err)
	}
	if calls != 1 {
		t.Fatalf("freeAddrs called %d times for a given address, want 1 (the peer port, not tried again: the taken port is not one it picked)", calls)
	}
}
