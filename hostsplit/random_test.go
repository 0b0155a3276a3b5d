package hostsplit

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// A random schedule of routing, flushing, server stops and starts, and
// splitter restarts on a 3-node cluster never loses a URL: once every node
// is up again, every URL routed (and flushed or closed) reaches its owner.
func TestRandomRestartsLoseNothing(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	c := newTestCluster(t, 3, func(o *Options) { o.BatchMaxURLs = 1 + int(seed%50); o.Window = 1 + int(seed%7) })
	ctx := context.Background()
	all := simURLs(6000, 500, int(seed%1000))
	routed := map[string]bool{}
	next := 0
	down := map[int]bool{}
	for step := 0; step < 60 && next < len(all); step++ {
		i := r.IntN(3)
		nd := c.nodes[i]
		switch a := r.IntN(10); {
		case a < 6: // a page's links on a node whose splitter is open
			n := 1 + r.IntN(120)
			chunk := all[next:min(next+n, len(all))]
			next += len(chunk)
			if err := nd.sp.Route(ctx, chunk); err != nil {
				t.Fatal(err)
			}
			for _, u := range chunk {
				routed[u] = true
			}
		case a < 7:
			if err := nd.sp.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		case a < 8: // the server goes away (its splitter keeps routing)
			if !down[i] {
				c.stopServer(nd)
				down[i] = true
			}
		case a < 9:
			if down[i] {
				c.serve(nd, nil)
				down[i] = false
			}
		default: // the whole node restarts (Close flushes its buffers)
			c.restart(nd)
			down[i] = false
		}
		if r.IntN(4) == 0 {
			time.Sleep(time.Duration(r.IntN(30)) * time.Millisecond)
		}
	}
	for i, nd := range c.nodes {
		if down[i] {
			c.serve(nd, nil)
		}
	}
	want := ownedBy(t, c.nodes[0].sp.Ownership().Ring(), keysOf(routed))
	for _, nd := range c.nodes {
		waitFor(t, "delivery to "+string(nd.id), func() bool {
			got := nd.sink.snapshot()
			for _, u := range want[nd.id] {
				if got[u] == 0 {
					return false
				}
			}
			return true
		})
		for u := range nd.sink.snapshot() {
			if o, _ := nd.sp.Ownership().Ring().OwnerOfURL(u); o != nd.id || !routed[u] {
				t.Errorf("%s got %s (owner %s, routed %v)", nd.id, u, o, routed[u])
			}
		}
	}
	waitFor(t, "termination", func() bool { ok, err := c.nodes[0].sp.Transport().Terminated(ctx); return err == nil && ok })
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
