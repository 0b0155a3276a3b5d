package crawl

import (
	"context"
	"sync"
	"testing"
	"time"
)

// A member that is not idle does not run the termination check: its own
// status would fail it, and the check costs 2(N−1) status calls on both
// ends every tick of Run. An idle member still checks, so the cluster
// still ends.
func TestBusyMemberAsksNoStatus(t *testing.T) {
	web, srv, _ := smallWeb(t, 1<<20)
	ms := startCluster(t, t.TempDir(), 2, srv, web.Domain())
	busy, idle := ms[0], ms[1]
	busy.Node.busy.Add(1) // as a fetch in flight, for the whole test
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.Run(ctx) }()
	}
	// The idle member asks every tick (and the busy one answers "busy").
	for idle.Split.Stats().StatusAsked < 6 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	asked, checked := busy.Split.Stats().StatusAsked, idle.Split.Stats().StatusAsked >= 6
	cancel()
	wg.Wait()
	busy.Node.busy.Add(-1)
	if !checked {
		t.Fatal("the idle member did not check for termination")
	}
	if asked != 0 {
		t.Errorf("the busy member made %d status calls; want 0", asked)
	}
	if served := busy.Split.Stats().StatusServed; served < 3 {
		t.Errorf("the busy member answered %d status calls; want ≥ 3", served)
	}
	for _, m := range ms {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}
}
