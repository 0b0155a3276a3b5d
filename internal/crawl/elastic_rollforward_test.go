package crawl

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/handoff"
)

// recordControl is a fakeControl that also serves a change record
// (ChangeRecords), as coord.Session does from etcd.
type recordControl struct {
	*fakeControl
	mu  sync.Mutex
	rec handoff.Record
}

func (r *recordControl) Current(context.Context) (handoff.Record, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec, r.rec.ID != "", nil
}

// Issue 25, a self-rollback with a control plane: a member still prepared
// past the change's deadline whose control plane recorded the change's
// COMMIT (and that every hand-off was applied: PhaseResuming) rolls
// forward — it adopts the new view and fetches on it — instead of back.
// Failed before the fix: the member rolled back to epoch 1 while the
// record said epoch 2 was the cluster's view.
func TestPreparedMemberRollsForwardOnRecordedCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, 1)
	rc := &recordControl{fakeControl: newFakeControl()}
	c.control = func(string) Control { return rc }
	defer c.stopAll()
	v1 := hostsplit.View{Epoch: 1, Members: c.all}
	m := c.start(0, v1.Members, 1, false)
	c.waitFetches(50)
	old := SelfRollbackGrace
	SelfRollbackGrace = 500 * time.Millisecond
	defer func() { SelfRollbackGrace = old }()
	v2 := hostsplit.View{Epoch: 2, Members: c.all}
	deadline := time.Now().Add(time.Second)
	if err := m.prepare(ctx, v2, deadline); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.rec = handoff.Record{ID: "change-x", Old: v1, New: v2, Phase: handoff.PhaseResuming, Deadline: deadline}
	rc.mu.Unlock()
	for m.Split.Ownership().Epoch() != 2 || m.Phase() != PhaseRunning {
		if time.Now().After(deadline.Add(SelfRollbackGrace + 3*time.Second)) {
			t.Fatalf("phase %q on epoch %d %v after the deadline, want running on epoch 2 (the recorded commit)",
				m.Phase(), m.Split.Ownership().Epoch(), time.Since(deadline))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("rolled forward %v after the deadline", time.Since(deadline).Round(time.Millisecond))
	rc.fakeControl.mu.Lock()
	adopted := rc.adopted
	rc.fakeControl.mu.Unlock()
	if adopted != 2 {
		t.Errorf("adopted epoch %d on the Control, want 2", adopted)
	}
	before := c.fetches()
	c.waitFetches(before + 20)
}
