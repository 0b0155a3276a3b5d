package coord

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestQuorum: with 3 etcd members, killing one keeps every session held;
// killing two (quorum lost) drops Held within the TTL; restoring them
// gives it back.
func TestQuorum(t *testing.T) {
	p := newPKI(t)
	names := []string{"etcd-0", "etcd-1", "etcd-2"}
	var dirs []string
	var certs [][2][]byte
	for _, n := range names {
		dirs = append(dirs, t.TempDir())
		certs = append(certs, p.issue(n))
	}
	ms, err := StartCluster(names, dirs, p.ca.CertPEM, certs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range ms {
			m.Close()
		}
	})
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.ClientURL)
	}
	ctx := context.Background()
	op := p.store("operator", eps...)
	if _, err := op.Init(ctx, view(1, "n0", "n1", "n2")); err != nil {
		t.Fatal(err)
	}
	var ss []*Session
	for i := range 3 {
		s := p.session(fmt.Sprintf("n%d", i), eps...)
		s.Adopt(1)
		ss = append(ss, s)
	}
	for _, s := range ss {
		waitHeld(t, s, true, 10*time.Second)
	}
	// Kill one member (the first: some sessions are connected to it).
	ms[0].Close()
	end := time.Now().Add(2 * testTTL)
	for time.Now().Before(end) {
		for i, s := range ss {
			if held, why := s.Held(); !held {
				t.Fatalf("n%d fenced with 2 of 3 etcd members up: %s", i, why)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Kill a second: no quorum.
	ms[1].Close()
	lost := time.Now()
	for i, s := range ss {
		waitHeld(t, s, false, testTTL)
		t.Logf("n%d fenced %v after quorum loss (TTL %v)", i, time.Since(lost).Round(time.Millisecond), testTTL)
	}
	// Restore both.
	restored := time.Now()
	done := make(chan error, 2)
	for _, i := range []int{0, 1} {
		go func() {
			m, err := StartEmbedded(ms[i].Options())
			if err == nil {
				ms[i] = m
			}
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range ss {
		waitHeld(t, s, true, 15*time.Second)
		t.Logf("n%d held again %v after restoring quorum", i, time.Since(restored).Round(time.Millisecond))
	}
}
