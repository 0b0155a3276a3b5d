package hostsplit

import (
	"fmt"
	"math"
	"testing"
)

func ring(t *testing.T, byDomain bool, ids ...NodeID) *Ring {
	t.Helper()
	r, err := NewRing(ids, byDomain)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestHost(t *testing.T) {
	cases := map[string]string{
		"http://h00042.sim.test/p/1.html":   "h00042.sim.test",
		"https://a.example:8443/x?y#z":      "a.example",
		"http://user:pw@b.example/":         "b.example",
		"http://[2001:db8::1]:8080/":        "2001:db8::1",
		"http://c.example?q":                "c.example",
		"http://d.example":                  "d.example",
		"http://u@[::1]/":                   "::1",
		"ftp://e.example/a@b/c":             "e.example",
		"https://f.example#frag:with:colon": "f.example",
	}
	for u, want := range cases {
		if got, ok := Host(u); !ok || got != want {
			t.Errorf("Host(%q) = %q, %v; want %q", u, got, ok, want)
		}
	}
	for _, u := range []string{"mailto:x@y", "http:///p", "http://[::1/"} {
		if got, ok := Host(u); ok {
			t.Errorf("Host(%q) = %q, want none", u, got)
		}
	}
}

// Adding a node moves only the hosts the new node takes (about 1/N), and
// removing it moves them back; the shares are balanced.
func TestRendezvousMovesOnlyOneShare(t *testing.T) {
	const hosts = 20000
	r3 := ring(t, false, "node-0", "node-1", "node-2")
	r4 := ring(t, false, "node-0", "node-1", "node-2", "node-3")
	share := map[NodeID]int{}
	moved := 0
	for i := range hosts {
		h := fmt.Sprintf("h%05d.sim.test", i)
		a, b := r3.Owner(h), r4.Owner(h)
		share[b]++
		if a != b {
			moved++
			if b != "node-3" {
				t.Fatalf("%s moved from %s to %s, not to the new node", h, a, b)
			}
		}
	}
	if moved != share["node-3"] {
		t.Fatalf("moved %d, new node owns %d", moved, share["node-3"])
	}
	for id, n := range share {
		if frac := float64(n) / hosts; math.Abs(frac-0.25) > 0.02 {
			t.Errorf("%s owns %.3f of hosts, want ~0.25", id, frac)
		}
	}
	// Order of the membership list does not matter.
	rr := ring(t, false, "node-2", "node-0", "node-1")
	for i := range 1000 {
		h := fmt.Sprintf("x%d.example", i)
		if r3.Owner(h) != rr.Owner(h) {
			t.Fatalf("owner of %s depends on member order", h)
		}
	}
}

func TestRingByDomain(t *testing.T) {
	r := ring(t, true, "a", "b", "c", "d", "e")
	owners := map[NodeID]bool{}
	for i := range 50 {
		owners[r.Owner(fmt.Sprintf("h%d.example.co.uk", i))] = true
	}
	if len(owners) != 1 {
		t.Errorf("one registered domain spread over %d nodes", len(owners))
	}
	if r.Owner("www.example.co.uk") != r.Owner("example.co.uk") {
		t.Error("www. and bare domain differ")
	}
	byHost := ring(t, false, "a", "b", "c", "d", "e")
	spread := map[NodeID]bool{}
	for i := range 50 {
		spread[byHost.Owner(fmt.Sprintf("h%d.example.co.uk", i))] = true
	}
	if len(spread) < 3 {
		t.Errorf("by host, 50 hosts use only %d of 5 nodes", len(spread))
	}
}

func TestNewRingRejectsBadMembership(t *testing.T) {
	for _, ids := range [][]NodeID{nil, {"a", "a"}, {""}, {"a\x00b"}} {
		if _, err := NewRing(ids, false); err == nil {
			t.Errorf("NewRing(%q) accepted", ids)
		}
	}
}
