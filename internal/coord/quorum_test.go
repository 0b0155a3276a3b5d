package coord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSessionRefusesTTLShorterThanElection: a lease TTL that a leader
// election would outlast is refused with a reason, before any dial.
func TestSessionRefusesTTLShorterThanElection(t *testing.T) {
	o := Options{Endpoints: []string{"https://127.0.0.1:1"}, TTL: 2 * time.Second} // etcd's 1 s election timeout
	_, err := NewSession(o, "n0")
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "TTL of at least 3s") {
		t.Fatalf("TTL 2 s with a 1 s election timeout: %v, want ErrInvalidOptions naming 3s", err)
	}
	o.ElectionTimeout = testElection
	s, err := NewSession(o, "n0")
	if err != nil {
		t.Fatalf("TTL 2 s with a 0.5 s election timeout: %v", err)
	}
	s.Close()
	o.ElectionTimeout, o.TTL = time.Second, 3*time.Second
	if s, err = NewSession(o, "n0"); err != nil {
		t.Fatalf("TTL 3 s with a 1 s election timeout: %v", err)
	}
	s.Close()
}

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
	ms, err := StartCluster(EmbedOptions{CAPEM: p.ca.CertPEM, TickMs: 50, ElectionMs: uint(testElection.Milliseconds())}, names, dirs, certs)
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
	// Kill the leader, the worst one: no renewal succeeds until the
	// other two elect a new one. Put it first: the second kill below
	// then takes a follower, and the restore restarts ms[0] and ms[1].
	for i, m := range ms {
		if m.IsLeader() {
			ms[0], ms[i] = ms[i], ms[0]
		}
	}
	ms[0].Kill()
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
	ms[1].Kill()
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
			ms[i].Close() // waits for Kill's cleanup (Dir, ports)
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
	t.Logf("killed members cleaned up and restarted in %v", time.Since(restored).Round(time.Millisecond))
	restored = time.Now()
	for i, s := range ss {
		waitHeld(t, s, true, 15*time.Second)
		t.Logf("n%d held again %v after the restarted members served", i, time.Since(restored).Round(time.Millisecond))
	}
}
