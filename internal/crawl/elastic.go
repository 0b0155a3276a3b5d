package crawl

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
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

// ownerOfKey is the owner, under ring, of a frontier host key (host[:port]).
func ownerOfKey(ring *hostsplit.Ring, hostport string) hostsplit.NodeID {
	h, ok := hostsplit.Host("x://" + hostport + "/")
	if !ok {
		h = hostport
	}
	return ring.Owner(h)
}

// handoff hands over, for epoch, every queued and fetched URL of the hosts
// this node no longer owns. It resumes an interrupted hand-off.
func (m *Member) handoff(ctx context.Context, epoch uint64) error {
	if m.el.transHook != nil {
		m.el.transHook("handoff")
	}
	start := time.Now()
	ring := m.Split.Ownership().Ring()
	notMine := func(hostport string) bool { return ownerOfKey(ring, hostport) != m.self }
	st := HandoffStats{Epoch: epoch}
	prev, _, err := m.Split.Spool().Meta(metaHandoffStats)
	if err != nil {
		return err
	}
	if prev != nil {
		var ps HandoffStats
		if json.Unmarshal(prev, &ps) == nil && ps.Epoch == epoch {
			st = ps // resuming: keep counting
		}
	}
	// 1. Fetched URLs of moved hosts, as seen-only entries (idempotent at
	// the receiver, so a resumed hand-off may resend them).
	fetched := map[string]bool{}
	hosts := map[string]bool{}
	// Only hosts this node owned in the previous view: hosts it handed
	// over in an earlier change are in its log too.
	var prevRing *hostsplit.Ring
	if prev := m.Split.Ownership().PreviousMembers(); len(prev) > 0 {
		if prevRing, err = hostsplit.NewRing(prev, false); err != nil {
			return err
		}
	}
	moved := func(u string) {
		if h, ok := hostsplit.Host(u); ok && ring.Owner(h) != m.self && (prevRing == nil || prevRing.Owner(h) == m.self) {
			fetched[u] = true
			hosts[h] = true
		}
	}
	if m.el.logPath != "" {
		// A malformed line must not fail the hand-off: every retry would
		// fail the same way and wedge the membership change.
		es, rs, err := ReadLog(m.el.logPath)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("crawl: hand-off: %w", err)
		}
		if st.MalformedLogLines = rs.Malformed; rs.Malformed > 0 {
			m.Node.opts.Logger.Warn("crawl: hand-off: skipped malformed lines", "lines", rs.Malformed, "file", m.el.logPath)
		}
		for _, e := range es {
			if !strings.HasSuffix(e.URL, LogEllipsis) { // a cut URL names no page
				moved(e.URL)
			}
		}
	}
	// URLs fetched by earlier owners of the hosts, handed to this node.
	in, err := readSeenIn(filepath.Join(m.Node.opts.DataDir, seenInLog))
	if err != nil {
		return err
	}
	for _, u := range in {
		moved(u)
	}
	seen := slices.Sorted(mapKeys(fetched))
	if done, _, err := m.Split.Spool().Meta(metaHandoffSeen); err != nil {
		return err
	} else if u64(done) == epoch {
		seen = nil // sent before a restart
	}
	saveStats := func() error {
		b, _ := json.Marshal(st)
		return m.Split.Spool().SetMeta(metaHandoffStats, b)
	}
	for len(seen) > 0 {
		n := min(len(seen), 4096)
		b, w, err := m.Split.SpoolHandoff(seen[:n], hostsplit.KindSeen, nil)
		if err != nil {
			return fmt.Errorf("crawl: hand-off: %w", err)
		}
		st.Batches += b
		st.WireBytes += w
		st.SeenURLs += n
		for _, u := range seen[:n] {
			st.RawBytes += uint64(len(u))
		}
		seen = seen[n:]
	}
	if err := saveStats(); err != nil {
		return err
	}
	if err := m.Split.Spool().SetMeta(metaHandoffSeen, u64b(epoch)); err != nil {
		return err
	}
	// 2. Queued URLs: staged out of the frontier atomically, then spooled
	// chunk by chunk with a resume mark.
	if _, err := m.Node.fr.Stage(notMine); err != nil {
		return fmt.Errorf("crawl: hand-off: %w", err)
	}
	if m.el.transHook != nil {
		m.el.transHook("staged")
	}
	markB, _, err := m.Split.Spool().Meta(metaHandoffMark)
	if err != nil {
		return err
	}
	mark := u64(markB)
	for {
		items, err := m.Node.fr.Staged(mark, handoffChunk)
		if err != nil {
			return fmt.Errorf("crawl: hand-off: %w", err)
		}
		if len(items) == 0 {
			break
		}
		var urls []string
		for _, it := range items {
			if h, ok := hostsplit.Host(it.URL); ok {
				hosts[h] = true
			}
			if fetched[queueKey(it.URL)] {
				continue // fetched already (requeued after a kill): seen-only is enough
			}
			urls = append(urls, it.URL)
		}
		last := items[len(items)-1].Seq
		b, w, err := m.Split.SpoolHandoff(urls, hostsplit.KindQueued, map[string][]byte{metaHandoffMark: u64b(last)})
		if err != nil {
			return fmt.Errorf("crawl: hand-off: %w", err)
		}
		if m.el.transHook != nil {
			m.el.transHook("spooled")
		}
		if err := m.Node.fr.Unstage(last); err != nil {
			return fmt.Errorf("crawl: hand-off: %w", err)
		}
		st.Batches += b
		st.WireBytes += w
		st.QueuedURLs += len(urls)
		for _, u := range urls {
			st.RawBytes += uint64(len(u))
		}
		mark = last
		if err := saveStats(); err != nil {
			return err
		}
		if m.el.transHook != nil {
			m.el.transHook("chunk")
		}
	}
	// The new owners hold the moved hosts' budget counts now (seen-only
	// URLs are counted at the receiver, queued ones as they are queued).
	if _, err := m.Node.fr.ForgetAdmitted(notMine); err != nil {
		return fmt.Errorf("crawl: hand-off: %w", err)
	}
	st.Hosts = len(hosts)
	st.Done = true
	st.Duration += time.Since(start)
	if err := saveStats(); err != nil {
		return err
	}
	if err := m.Split.Spool().SetMeta(metaHandoffDone, u64b(epoch)); err != nil {
		return err
	}
	m.el.mu.Lock()
	m.el.handoff = st
	m.el.mu.Unlock()
	return nil
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// reseedLost re-submits the seeds whose host this node gained from a
// member lost with its disk: what that member had fetched is unknown, so
// its hosts are crawled again from their seeds and from every URL a
// survivor had sent it (hostsplit.ResendLost, called before).
func (m *Member) reseedLost(ctx context.Context, oldRing *hostsplit.Ring, lost []hostsplit.NodeID) error {
	var mine []string
	for _, s := range m.seeds {
		h, ok := hostsplit.Host(s)
		if !ok {
			continue
		}
		if slices.Contains(lost, oldRing.Owner(h)) && m.Split.Ownership().Owner(h) == m.self {
			mine = append(mine, s)
		}
	}
	m.reseeded.Add(uint64(len(mine)))
	if len(mine) == 0 {
		return nil
	}
	return m.Node.Seed(ctx, mine)
}

// DeliverSeen records URLs fetched by another node (a hand-off) in the
// DUE's seen-set and counts them, per host, under the frontier's per-host
// budget once per (source, seq): with the queued URLs of the hand-off
// (counted as they are queued) a moved host's count is what its old owner
// had admitted, so the budget holds across the change of owner.
//
// The URLs are also appended to DataDir/handoff-seen.log: if the host moves
// on to a third node, this node's hand-off passes them on with the URLs it
// fetched itself (its crawl log), or the third node would fetch them again.
func (n *Node) DeliverSeen(_ context.Context, source string, seq uint64, urls []string) error {
	if err := appendSeenIn(filepath.Join(n.opts.DataDir, seenInLog), urls); err != nil {
		return err
	}
	if err := n.addSeen(urls); err != nil {
		return err
	}
	counts := map[string]int{}
	for _, u := range urls {
		if h := hostOf(u); h != "" {
			counts[h]++
		}
	}
	return n.fr.AddAdmitted(source, seq, counts)
}

// seenInLog (in the data dir) lists the URLs handed to this node as
// already fetched, one per line; a batch delivered again is listed again.
const seenInLog = "handoff-seen.log"

var seenInMu sync.Mutex // one append at a time

// appendSeenIn appends urls to the file at path, durably.
func appendSeenIn(path string, urls []string) error {
	var b []byte
	for _, u := range urls {
		if strings.ContainsAny(u, "\n\r") {
			continue // cannot happen for URLs that passed the DUE
		}
		b = append(append(b, u...), '\n')
	}
	seenInMu.Lock()
	defer seenInMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("crawl: hand-off: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// readSeenIn returns the URLs of the seen-in log at path (none if it does
// not exist); a torn last line is returned as is and matches no host.
func readSeenIn(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("crawl: hand-off: %w", err)
	}
	return strings.Fields(string(b)), nil
}

func (n *Node) addSeen(urls []string) error {
	es := make([]due.Entry, 0, len(urls))
	for _, u := range urls {
		es = append(es, due.Entry{FP: urlFP(u), URL: u, SeenOnly: true})
	}
	n.metrics.Received.Add(uint64(len(urls)))
	return n.due.AddBatch(es)
}

// DeliverQueued takes URLs queued by another node (a hand-off): they join
// the seen-set and go straight to the frontier, once per (source, seq).
func (n *Node) DeliverQueued(ctx context.Context, source string, seq uint64, urls []string) error {
	if err := n.addSeen(urls); err != nil {
		return err
	}
	items := make([]frontier.Item, 0, len(urls))
	for _, u := range urls {
		host := hostOf(u)
		items = append(items, frontier.Item{URL: u, Host: host, Depth: receivedDepth(u)})
	}
	return n.fr.AddBatch(source, seq, items)
}

// testDeliverHook, if set (a test's child process), is called once a
// hand-off batch is applied, before it is acknowledged: "seen" or "queued".
var testDeliverHook func(kind string)

// DeliverSeen and DeliverQueued pass hand-offs to the node.
func (s *sinkRef) DeliverSeen(ctx context.Context, source string, seq uint64, urls []string) error {
	err := s.n.DeliverSeen(ctx, source, seq, urls)
	if err == nil && testDeliverHook != nil {
		testDeliverHook("seen")
	}
	return err
}

func (s *sinkRef) DeliverQueued(ctx context.Context, source string, seq uint64, urls []string) error {
	err := s.n.DeliverQueued(ctx, source, seq, urls)
	if err == nil && testDeliverHook != nil {
		testDeliverHook("queued")
	}
	return err
}

// knownVerifier accepts a TLS peer signed by the cluster CA (checked by the
// handshake) whose node id known(id) accepts: the membership changes, so
// the set is consulted at each handshake.
func knownVerifier(known func(hostsplit.NodeID) bool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
			return errors.New("crawl: peer certificate not verified")
		}
		if tlsutil.IsOperator(cs.PeerCertificates[0]) {
			return nil // the services decide what an operator may call (operatorGate)
		}
		id, err := tlsutil.ID(cs.PeerCertificates[0])
		if err != nil {
			return err
		}
		if !known(hostsplit.NodeID(id)) {
			return fmt.Errorf("%w: %q", tlsutil.ErrNotMember, id)
		}
		return nil
	}
}

// membershipServer serves the Membership service of one member.
type membershipServer struct {
	pb.UnimplementedMembershipServer
	m *Member
}

// State returns the member's membership state.
func (m *Member) State() *pb.MemberState {
	m.el.mu.Lock()
	phase, pending, h, deadline := m.el.phase, m.el.pending, m.el.handoff, m.el.deadline
	m.el.mu.Unlock()
	st := &pb.MemberState{NodeId: string(m.self), View: hostsplit.ViewToProto(m.Split.Ownership().View()), Phase: phase,
		Removed: nodeIDStrings(m.Split.Ownership().Removed()), PendingDeadlineUnixNano: unixNano(deadline),
		Handoff: &pb.Handoff{Epoch: h.Epoch, Done: h.Done, Hosts: uint64(h.Hosts), QueuedUrls: uint64(h.QueuedURLs),
			SeenUrls: uint64(h.SeenURLs), Batches: h.Batches, WireBytes: h.WireBytes, DurationNs: int64(h.Duration),
			RawBytes: h.RawBytes}}
	if pending != nil {
		st.PendingEpoch = pending.Epoch
	}
	return st
}

func (s *membershipServer) GetView(ctx context.Context, r *pb.GetViewRequest) (*pb.MemberState, error) {
	if err := s.auth(ctx); err != nil {
		return nil, err
	}
	st := s.m.State()
	if r.GetWithStatus() {
		st.Status = hostsplit.NodeStatusToProto(s.m.Split.Transport().LocalStatus())
	}
	return st, nil
}

func (s *membershipServer) Transition(ctx context.Context, r *pb.TransitionRequest) (*pb.MemberState, error) {
	op, err := s.authOperator(ctx)
	if err != nil {
		return nil, err
	}
	if id := r.GetChangeId(); id != "" {
		op += " (change " + id + ")"
	}
	v := hostsplit.ViewFromProto(r.GetView())
	var lost []hostsplit.NodeID
	for _, id := range r.GetLost() {
		lost = append(lost, hostsplit.NodeID(id))
	}
	switch r.GetPhase() {
	case pb.TransitionRequest_PHASE_PREPARE:
		var deadline time.Time
		if d := r.GetDeadlineUnixNano(); d != 0 {
			deadline = time.Unix(0, d)
		}
		err = s.m.prepare(ctx, v, deadline)
	case pb.TransitionRequest_PHASE_ROLLBACK:
		err = s.m.rollback(v, "ROLLBACK from "+op)
	case pb.TransitionRequest_PHASE_COMMIT:
		err = s.m.commit(ctx, v, lost)
	case pb.TransitionRequest_PHASE_RESUME:
		err = s.m.resume(v)
	default:
		return nil, status.Errorf(codes.InvalidArgument, "crawl: unknown phase %v", r.GetPhase())
	}
	if err != nil {
		code := codes.FailedPrecondition
		if errors.Is(err, hostsplit.ErrBadView) {
			code = codes.InvalidArgument
		}
		if errors.Is(err, hostsplit.ErrRemovedID) {
			code = codes.PermissionDenied
		}
		return nil, status.Errorf(code, "%s: %v", r.GetPhase(), err)
	}
	return s.m.State(), nil
}

// ErrNoView reports a crawl-log entry whose epoch is not among the views
// given to ForeignFetches (or that has none: not written by a member).
var ErrNoView = errors.New("crawl: no view for the crawl-log entry's epoch")

// ForeignFetches audits crawl logs against the membership history: it
// returns the entries where a node fetched a URL of a host that it did not
// own in the view of the entry's epoch (LogEntry.Epoch). views must hold
// every view the crawl went through; an entry with no epoch or an unknown
// one is an ErrNoView. Robots.txt lines count as fetches of their host.
func ForeignFetches(entries []LogEntry, views ...hostsplit.View) ([]LogEntry, error) {
	rings := map[uint64]*hostsplit.Ring{}
	for _, v := range views {
		r, err := hostsplit.NewRing(v.IDs(), false)
		if err != nil {
			return nil, fmt.Errorf("crawl: view of epoch %d: %w", v.Epoch, err)
		}
		rings[v.Epoch] = r
	}
	var foreign []LogEntry
	for _, e := range entries {
		r := rings[e.Epoch]
		if r == nil {
			return foreign, fmt.Errorf("%w: %s fetched %s under epoch %d", ErrNoView, e.Node, e.URL, e.Epoch)
		}
		h, ok := hostsplit.Host(e.URL)
		if !ok {
			continue // not a fetchable URL: nothing was requested
		}
		if string(r.Owner(h)) != e.Node {
			foreign = append(foreign, e)
		}
	}
	return foreign, nil
}
