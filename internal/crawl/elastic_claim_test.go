package crawl

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// PREPARE must leave no worker able to start a fetch once it returns: the
// hosts are about to move. Here Run has decided to start the workers
// (phase RUNNING) when PREPARE comes (testHookBeforeWorkers holds it
// there), and the workers then run before Run notices the phase change
// (testHookWorkersStarted holds that). PREPARE used to return at once
// (no workers were running), and the workers then fetched hosts about to
// move. A worker now claims its fetch under the phase's lock
// (claimFetch): refused after PREPARE, it puts its URL back unfetched.
func TestPrepareWaitsForWorkersAboutToStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var once1, once2 sync.Once
	before, release := make(chan struct{}), make(chan struct{})
	started, check := make(chan struct{}), make(chan struct{})
	testHookBeforeWorkers = func(*Member) {
		once1.Do(func() {
			close(before)
			select { // ctx: a failed test does not leave Run stuck
			case <-release:
			case <-ctx.Done():
			}
		})
	}
	testHookWorkersStarted = func(*Member) {
		once2.Do(func() {
			close(started)
			select {
			case <-check:
			case <-ctx.Done():
			}
		})
	}
	t.Cleanup(func() { testHookBeforeWorkers, testHookWorkersStarted = nil, nil })

	c := newElasticCluster(t, ctx, 1)
	v1 := hostsplit.View{Epoch: 1, Members: c.all}
	m := c.start(0, v1.Members, 1, false)
	<-before // Run chose to fetch; no worker runs yet
	if err := m.prepare(ctx, hostsplit.View{Epoch: 2, Members: c.all}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	st := m.Node.Stats()
	done := st.Fetches + st.RobotsFetches
	requeued := st.Frontier.Requeued
	close(release)
	<-started // the workers run; Run has not seen the phase change
	// Wait for a worker to act: either it fetches (the bug) or, refused,
	// puts its URL back (a fetch of robots.txt puts it back too, counted
	// before).
	for {
		st = m.Node.Stats()
		if st.Fetches+st.RobotsFetches > done || st.Frontier.Requeued > requeued || ctx.Err() != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(check)
	if got := st.Fetches + st.RobotsFetches; got != done {
		t.Errorf("%d requests (pages and robots.txt) after PREPARE returned: want none", got-done)
	}
	cancel()
	c.wg.Wait()
	for _, m := range c.ms {
		m.Close()
	}
}
