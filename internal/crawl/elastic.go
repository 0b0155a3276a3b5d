package crawl

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

// Elastic membership (issue 10). A membership change is a barrier that the
// operator's `crawler cluster add|remove` (ChangeMembership) drives over
// every node of the old and the new view, through the Membership gRPC
// service each member serves:
//
//  1. PREPARE: the node stops fetching (leases finish or are requeued),
//     spools every buffered remote URL and merges its DUE. It keeps
//     receiving batches. The caller waits until two Status rounds show
//     every node paused and every batch sent applied (hostsplit.Drained):
//     then no URL is travelling.
//  2. COMMIT: the node adopts the new view (hostsplit.SetView: routing by
//     the new ring, senders for new members, batches spooled for a member
//     that left re-routed) and hands over every host whose rendezvous owner
//     changed: the host's already fetched URLs (from the crawl log) as
//     seen-only entries, then its queued frontier URLs, spooled for the new
//     owner in the same mTLS channel as any batch. Queued URLs move out of
//     the frontier through its staging area (frontier.Stage) with a resume
//     mark stored atomically with each spooled chunk, so a node killed
//     during a hand-off resumes it on restart without losing or repeating
//     a URL. The caller waits for Drained again: every hand-off applied.
//  3. RESUME: members fetch again; a node the view removed stays stopped
//     and may be shut down.
//
// Because nobody fetches between PREPARE and RESUME, the new owner of a
// host knows its whole seen-set before it discovers any link to it: no URL
// is fetched twice. The phase is persisted (in the splitter's store), so a
// node restarted mid-change comes back paused in the same phase.

// Phases of a member, as reported by MemberState.phase.
const (
	PhaseRunning   = "running"
	PhaseJoining   = "joining"
	PhasePrepared  = "prepared"
	PhaseCommitted = "committed"
	PhaseRemoved   = "removed"
)

// HandoffStats describe the last hand-off a node made as an old owner.
type HandoffStats struct {
	Epoch      uint64
	Done       bool
	Hosts      int // hosts handed over
	QueuedURLs int
	SeenURLs   int
	Batches    uint64
	WireBytes  uint64
	RawBytes   uint64 // URL bytes handed over, before coding
	Duration   time.Duration
	// MalformedLogLines: crawl-log lines the hand-off skipped (ReadLog).
	MalformedLogLines int
}

// elastic is a Member's membership-change state.
type elastic struct {
	mu        sync.Mutex
	phase     string
	pending   *hostsplit.View // the view being changed to
	lost      []hostsplit.NodeID
	changed   chan struct{} // closed and replaced when phase changes
	running   bool          // Node.Run is running
	stopped   chan struct{} // closed and replaced when running becomes false
	claims    fetchClaims   // workers processing a URL (elastic_claim.go)
	handoff   HandoffStats
	commitMu  sync.Mutex // serialises COMMIT work
	logPath   string
	transHook func(phase string) // tests: called at the start of each commit step
	// deadline of the pending change (zero: none) and the phase the
	// member was in before PREPARE, to go back to on ROLLBACK.
	deadline  time.Time
	prevPhase string
}

type persistedPhase struct {
	Phase   string          `json:"phase"`
	Pending *hostsplit.View `json:"pending,omitempty"`
	// Deadline of the pending change; PrevPhase the phase before PREPARE.
	Deadline  time.Time `json:"deadline,omitzero"`
	PrevPhase string    `json:"prev_phase,omitempty"`
}

const (
	metaPhase        = "elastic-phase"
	metaHandoffTodo  = "handoff-todo" // epoch whose hand-off has started
	metaHandoffDone  = "handoff-done" // epoch whose hand-off is complete
	metaHandoffMark  = "handoff-mark" // highest staged frontier seq spooled
	metaHandoffStats = "handoff-stats"
	metaHandoffSeen  = "handoff-seen" // epoch whose seen-only URLs are spooled
)

// handoffChunk is how many staged URLs one hand-off step spools.
var handoffChunk = 1000

func u64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func u64b(x uint64) []byte { return binary.BigEndian.AppendUint64(nil, x) }

func (m *Member) initElastic(o MemberOptions) error {
	e := &m.el
	e.changed = make(chan struct{})
	e.stopped = make(chan struct{})
	close(e.stopped)
	e.phase = PhaseRunning
	if o.Joining && m.Split.Ownership().Epoch() == 0 { // Joining is ignored once the node has a view
		e.phase = PhaseJoining
	}
	e.transHook = o.testHandoffHook
	// Each crawl-log line records the epoch of the view it was fetched
	// under: workers only run while the view does not change (a change
	// stops them at PREPARE and starts them at RESUME).
	m.Node.log.SetEpochSource(m.Split.Ownership().Epoch)
	e.logPath = o.CrawlLogPath
	if e.logPath == "" && o.Node.CrawlLog == nil {
		e.logPath = filepath.Join(o.Node.DataDir, "crawl.log")
	}
	v, ok, err := m.Split.Spool().Meta(metaPhase)
	if err != nil {
		return err
	}
	if ok {
		var pp persistedPhase
		if err := json.Unmarshal(v, &pp); err != nil {
			return fmt.Errorf("crawl: stored membership phase: %w", err)
		}
		e.phase, e.pending, e.deadline, e.prevPhase = pp.Phase, pp.Pending, pp.Deadline, pp.PrevPhase
		if e.pending != nil {
			m.Split.Ownership().Expect(*e.pending)
		}
	}
	if !m.Split.Ownership().View().Has(m.self) && m.Split.Ownership().Epoch() > 0 {
		e.phase = PhaseRemoved
	}
	if st, ok, _ := m.Split.Spool().Meta(metaHandoffStats); ok {
		_ = json.Unmarshal(st, &e.handoff)
	}
	return nil
}

// resumeElastic finishes what a crash interrupted: re-routes batches for
// departed members and completes an unfinished hand-off.
func (m *Member) resumeElastic(ctx context.Context) error {
	if err := m.Split.RerouteOrphans(ctx); err != nil {
		return err
	}
	todo, _, err := m.Split.Spool().Meta(metaHandoffTodo)
	if err != nil {
		return err
	}
	done, _, err := m.Split.Spool().Meta(metaHandoffDone)
	if err != nil {
		return err
	}
	if u64(todo) > u64(done) {
		return m.handoff(ctx, u64(todo))
	}
	return nil
}

func (m *Member) setPhase(phase string, pending *hostsplit.View) error {
	m.el.mu.Lock()
	deadline, prev := m.el.deadline, m.el.prevPhase
	m.el.mu.Unlock()
	if pending == nil {
		deadline, prev = time.Time{}, ""
	}
	return m.setPhaseDeadline(phase, pending, deadline, prev)
}

// setPhaseDeadline persists and sets the phase, the pending view, its
// deadline and the phase to roll back to.
func (m *Member) setPhaseDeadline(phase string, pending *hostsplit.View, deadline time.Time, prev string) error {
	b, err := json.Marshal(persistedPhase{Phase: phase, Pending: pending, Deadline: deadline, PrevPhase: prev})
	if err != nil {
		return err
	}
	if err := m.Split.Spool().SetMeta(metaPhase, b); err != nil {
		return err
	}
	e := &m.el
	e.mu.Lock()
	e.phase, e.pending, e.deadline, e.prevPhase = phase, pending, deadline, prev
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
	return nil
}

// Phase returns the member's membership phase.
func (m *Member) Phase() string {
	m.el.mu.Lock()
	defer m.el.mu.Unlock()
	return m.el.phase
}

// Handoff returns the statistics of the last hand-off this member made.
func (m *Member) Handoff() HandoffStats {
	m.el.mu.Lock()
	defer m.el.mu.Unlock()
	return m.el.handoff
}

// shouldFetch reports whether the workers should run, and the channel
// closed at the next phase change.
func (m *Member) shouldFetch() (bool, <-chan struct{}) {
	m.el.mu.Lock()
	defer m.el.mu.Unlock()
	return m.el.phase == PhaseRunning, m.el.changed
}

func (m *Member) setRunning(r bool) {
	e := &m.el
	e.mu.Lock()
	defer e.mu.Unlock()
	if r == e.running {
		return
	}
	e.running = r
	if r {
		e.stopped = make(chan struct{})
	} else {
		close(e.stopped)
	}
}

// paused reports whether the member is stopped for a membership change with
// nothing in flight and nothing buffered in its DUE (it merges the DUE).
func (m *Member) paused() bool {
	e := &m.el
	e.mu.Lock()
	p, running := e.phase, e.running
	e.mu.Unlock()
	if p == PhaseRunning || running || m.Node.busy.Load() != 0 {
		return false
	}
	if err := m.Node.Flush(); err != nil {
		return false
	}
	st := m.Node.due.Stats()
	return st.BufferEntries == 0 && st.MergingEntries == 0 && st.PendingBatches == 0
}

// prepare stops the workers and spools what they buffered. A change not
// committed by deadline (zero: none) is rolled back by the member itself
// (deadlineLoop).
func (m *Member) prepare(ctx context.Context, v hostsplit.View, deadline time.Time) error {
	m.el.commitMu.Lock() // not while a ROLLBACK or a COMMIT runs
	cur := m.Split.Ownership().Epoch()
	if v.Epoch <= cur {
		m.el.commitMu.Unlock()
		if v.Epoch == cur {
			return nil // already committed: a repeated PREPARE
		}
		return fmt.Errorf("%w: epoch %d, node is on %d", hostsplit.ErrStaleView, v.Epoch, cur)
	}
	for _, id := range v.IDs() {
		if slices.Contains(m.Split.Ownership().Removed(), id) {
			m.el.commitMu.Unlock()
			return fmt.Errorf("%w: %s (add the node under a new id)", hostsplit.ErrRemovedID, id)
		}
	}
	m.Split.Ownership().Expect(v)
	p := m.Phase()
	m.el.mu.Lock()
	prev := m.el.prevPhase
	m.el.mu.Unlock()
	if p != PhasePrepared || prev == "" {
		prev = p // the first PREPARE of this change
	}
	next := PhasePrepared
	if p == PhaseJoining || p == PhaseRemoved {
		next = p
	}
	err := m.setPhaseDeadline(next, &v, deadline, prev)
	m.el.commitMu.Unlock()
	if err != nil {
		return err
	}
	// Wait for the workers to stop (Run notices the phase change).
	m.el.mu.Lock()
	stopped := m.el.stopped
	m.el.mu.Unlock()
	select {
	case <-stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	// And for any worker that claimed a URL before the phase changed, had
	// Run not started its workers yet (elastic_claim.go).
	select {
	case <-m.claimsEnded():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := m.Split.Flush(ctx); err != nil {
		return err
	}
	return m.Node.Flush()
}

// commit adopts v and hands over the hosts that changed owner.
func (m *Member) commit(ctx context.Context, v hostsplit.View, lost []hostsplit.NodeID) error {
	m.el.commitMu.Lock()
	defer m.el.commitMu.Unlock()
	cur := m.Split.Ownership().Epoch()
	switch {
	case v.Epoch < cur:
		return fmt.Errorf("%w: epoch %d, node is on %d", hostsplit.ErrStaleView, v.Epoch, cur)
	case v.Epoch == cur && m.Phase() != PhasePrepared:
		return nil // done before (a repeated COMMIT)
	}
	if p := m.Phase(); p == PhaseRunning {
		return fmt.Errorf("crawl: COMMIT of epoch %d before PREPARE", v.Epoch)
	}
	if !m.paused() {
		return errors.New("crawl: COMMIT while the node is not paused")
	}
	oldRing := m.Split.Ownership().Ring()
	oldIDs := m.Split.Ownership().View().IDs()
	if v.Epoch == cur { // a COMMIT repeated after a crash: v is adopted
		oldIDs = m.Split.Ownership().PreviousMembers()
	}
	if err := m.Split.Spool().SetMeta(metaHandoffTodo, u64b(v.Epoch)); err != nil {
		return err
	}
	if err := m.Split.SetView(ctx, v); err != nil {
		return err
	}
	if m.ctl != nil {
		// Held again once etcd's view is v too (the coordinator committed
		// it there before sending COMMIT).
		m.ctl.Adopt(v.Epoch)
	}
	if err := m.handoff(ctx, v.Epoch); err != nil {
		return err
	}
	// The hosts handed over took their queued URLs along, and with them
	// any count of failed attempts: forget those here (fetchretry.go).
	if sp := m.Node.opts.Splitter; sp != nil {
		m.Node.retry.forgetMoved(sp.IsLocal)
	}
	// What this node had told a member lost with its disk is re-sent to
	// the new owners of its hosts; a graceful leaver's hand-off carried
	// what it knew, so what it was told is forgotten.
	for _, id := range oldIDs {
		if id != m.self && !v.Has(id) && !slices.Contains(lost, id) {
			if err := m.Split.Spool().DropArchive(id); err != nil {
				return err
			}
		}
	}
	if len(lost) > 0 {
		n, err := m.Split.ResendLost(ctx, lost)
		m.resent.Add(n)
		if err != nil {
			return err
		}
		if err := m.reseedLost(ctx, oldRing, lost); err != nil {
			return err
		}
	}
	phase := PhaseCommitted
	if !v.Has(m.self) {
		phase = PhaseRemoved
	}
	return m.setPhase(phase, &v)
}

// resume lets the workers fetch again.
func (m *Member) resume(v hostsplit.View) error {
	if m.Split.Ownership().Epoch() != v.Epoch {
		return fmt.Errorf("crawl: RESUME of epoch %d, node is on %d (COMMIT first)", v.Epoch, m.Split.Ownership().Epoch())
	}
	// The change is done: the members it dropped lose their rights here.
	if err := m.Split.Ownership().Retire(); err != nil {
		return err
	}
	if m.Phase() == PhaseRemoved {
		return m.setPhase(PhaseRemoved, nil)
	}
	return m.setPhase(PhaseRunning, nil)
}
