package crawl

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeControl is a Control the test switches by hand.
type fakeControl struct {
	mu      sync.Mutex
	held    bool
	removed bool
	adopted uint64
	changed chan struct{}
}

func newFakeControl() *fakeControl { return &fakeControl{held: true, changed: make(chan struct{})} }

func (f *fakeControl) set(held, removed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held, f.removed = held, removed
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeControl) Held() (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removed {
		return false, "removed"
	}
	if !f.held {
		return false, "test cut"
	}
	return true, ""
}

func (f *fakeControl) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeControl) Removed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.removed
}

func (f *fakeControl) Adopt(e uint64) {
	f.mu.Lock()
	f.adopted = e
	f.mu.Unlock()
}

// TestFencedMemberStopsFetching: while its Control does not hold, a member
// sends no request (page or robots.txt) beyond those in flight, says why
// in Stats.Fenced, resumes when held again, and ends Run when removed
// behind its back.
func TestFencedMemberStopsFetching(t *testing.T) {
	web, srv, _ := smallWeb(t, 1<<20)
	root := t.TempDir()
	members, seats, err := LoopbackCluster(filepath.Join(root, "pki"), 1)
	if err != nil {
		t.Fatal(err)
	}
	o := testNodeOptions(t, filepath.Join(root, seats[0].ID), srv, web.Domain())
	o.Workers = 8
	o.Frontier.MinDelay = 50 * time.Millisecond
	ctl := newFakeControl()
	m, err := StartMember(MemberOptions{Node: o, Self: seats[0].ID, Members: members, TLS: seats[0].TLS, Listener: seats[0].Listener,
		Control: ctl})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- m.Run(ctx) }()
	requests := func() uint64 {
		st := m.Node.Stats()
		return st.Fetches + st.FetchesRequeued + st.RobotsFetches
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("fetches", func() bool { return m.Node.Stats().Fetches >= 20 })
	ctl.set(false, false)
	// Fetches in flight finish; then nothing.
	waitFor("in-flight fetches", func() bool { return m.Node.busy.Load() == 0 })
	before := requests()
	time.Sleep(500 * time.Millisecond)
	if after := requests(); after != before {
		t.Fatalf("fenced member sent %d requests", after-before)
	}
	if f := m.Node.Stats().Fenced; !strings.HasPrefix(f, "fenced: test cut") {
		t.Fatalf("Stats.Fenced = %q", f)
	}
	if ctl.adopted != 1 {
		t.Fatalf("member adopted epoch %d, want 1", ctl.adopted)
	}
	ctl.set(true, false)
	waitFor("resumed fetches", func() bool { return requests() > before+5 })
	if f := m.Node.Stats().Fenced; f != "" {
		t.Fatalf("Stats.Fenced = %q while held", f)
	}
	ctl.set(false, true)
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("removed member's Run did not return")
	}
}

// TestStaleFetches flags lines logged under an epoch older than a view
// committed more than the grace before them, and nothing else.
func TestStaleFetches(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	commits := []ViewCommit{{Epoch: 2, At: t0.Add(10 * time.Second)}, {Epoch: 1, At: t0}}
	es := []LogEntry{
		{URL: "a", Epoch: 1, Time: t0.Add(5 * time.Second)},          // before the commit
		{URL: "b", Epoch: 1, Time: t0.Add(10500 * time.Millisecond)}, // in flight at the commit
		{URL: "c", Epoch: 1, Time: t0.Add(12 * time.Second)},         // split brain
		{URL: "d", Epoch: 2, Time: t0.Add(12 * time.Second)},
	}
	got := StaleFetches(es, commits, time.Second)
	if len(got) != 1 || got[0].URL != "c" {
		t.Fatalf("StaleFetches = %+v, want only c", got)
	}
}
