package crawl

import (
	"context"
	"slices"
	"time"
)

// Control is the control plane's say over a member (issue 25, defect 1):
// whether it may start fetching now, proven by a lease on a quorum and a
// current view (coord.Session implements it). Safe for concurrent use.
//
// A member with a Control starts a fetch (or a robots.txt request) only
// while Held; when it is not, its workers stop taking work (fetches in
// flight finish, leased URLs are requeued) and Stats.Fenced says why. A
// member that Control reports Removed while it was not part of the change
// (cut off, removed with --lost) ends its Run.
type Control interface {
	// Held reports whether the member may fetch, and if not, why.
	Held() (bool, string)
	// Changed is closed at the next change of Held's answer.
	Changed() <-chan struct{}
	// Removed reports that the cluster removed this member for good.
	Removed() bool
	// Adopt tells the control plane the view epoch the member runs on:
	// it is Held only while that is the cluster's.
	Adopt(epoch uint64)
}

// fenceHeld reports whether the member may start a fetch: always without
// a Control.
func (m *Member) fenceHeld() (bool, string) {
	if m.ctl == nil {
		return true, ""
	}
	m.ctl.Adopt(m.Split.Ownership().Epoch())
	return m.ctl.Held()
}

// fenceChanged is closed when Held may have changed (nil: never).
func (m *Member) fenceChanged() <-chan struct{} {
	if m.ctl == nil {
		return nil
	}
	return m.ctl.Changed()
}

// removedBehindBack reports whether the control plane removed this member
// while it was running (not part of the change: cut off, --lost). A member
// removed by a change it took part in follows that change instead (its
// hand-off is served before it goes).
func (m *Member) removedBehindBack() bool {
	if m.ctl == nil || !m.ctl.Removed() || m.Phase() != PhaseRunning {
		return false
	}
	// A member rolled back from a change that fenced it (a graceful leave
	// aborted after the fence) may see the ROLLBACK before its Control
	// sees the removed mark undone: ask the control plane again.
	if r, ok := m.ctl.(Refresher); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := r.Refresh(ctx)
		cancel()
		if err == nil {
			return m.ctl.Removed()
		}
	}
	return true
}

// Refresher is implemented by a Control that can re-read its state from
// the control plane at once (coord.Session).
type Refresher interface {
	Refresh(ctx context.Context) error
}

// ViewCommit is when a view became the cluster's (the control plane's
// commit of a membership change).
type ViewCommit struct {
	Epoch uint64
	At    time.Time
}

// StaleFetches audits crawl logs against the times views were committed:
// it returns the entries a node logged under an epoch older than the view
// the cluster had committed more than grace before the entry's time (a
// node that went on fetching after it was removed or after a newer view
// was committed without it: split brain). grace covers fetches in flight
// at the commit (their line is written when they end). ForeignFetches
// cannot see these: the node did own the host in its own, stale, view.
func StaleFetches(entries []LogEntry, commits []ViewCommit, grace time.Duration) []LogEntry {
	cs := slices.Clone(commits)
	slices.SortFunc(cs, func(a, b ViewCommit) int { return a.At.Compare(b.At) })
	var stale []LogEntry
	for _, e := range entries {
		for _, c := range cs {
			if c.At.Add(grace).After(e.Time) {
				break
			}
			if c.Epoch > e.Epoch {
				stale = append(stale, e)
				break
			}
		}
	}
	return stale
}

// RemovedByControl reports whether Run ended because the control plane
// removed this member behind its back.
func (m *Member) RemovedByControl() bool { return m.removedBehindBack() }
