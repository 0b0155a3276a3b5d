package crawl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
)

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
	saveStats := func() error {
		b, _ := json.Marshal(st)
		return m.Split.Spool().SetMeta(metaHandoffStats, b)
	}
	fetched, hosts, err := m.movedFetched(ring, &st)
	if err != nil {
		return err
	}
	if err := m.spoolSeen(epoch, fetched, &st, saveStats); err != nil {
		return err
	}
	if err := m.spoolQueued(notMine, fetched, hosts, &st, saveStats); err != nil {
		return err
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

// movedFetched is step 1 of a hand-off: the URLs this node (or an earlier
// owner that handed them here) fetched on hosts it no longer owns, and
// those hosts.
func (m *Member) movedFetched(ring *hostsplit.Ring, st *HandoffStats) (fetched, hosts map[string]bool, err error) {
	// 1. Fetched URLs of moved hosts, as seen-only entries (idempotent at
	// the receiver, so a resumed hand-off may resend them).
	fetched, hosts = map[string]bool{}, map[string]bool{}
	// Only hosts this node owned in the previous view: hosts it handed
	// over in an earlier change are in its log too.
	var prevRing *hostsplit.Ring
	if prev := m.Split.Ownership().PreviousMembers(); len(prev) > 0 {
		if prevRing, err = hostsplit.NewRing(prev, false); err != nil {
			return nil, nil, err
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
			return nil, nil, fmt.Errorf("crawl: hand-off: %w", err)
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
		return nil, nil, err
	}
	for _, u := range in {
		moved(u)
	}
	return fetched, hosts, nil
}

// spoolSeen spools the fetched URLs of moved hosts for their new owners
// as seen-only entries, once per epoch.
func (m *Member) spoolSeen(epoch uint64, fetched map[string]bool, st *HandoffStats, saveStats func() error) error {
	seen := slices.Sorted(mapKeys(fetched))
	if done, _, err := m.Split.Spool().Meta(metaHandoffSeen); err != nil {
		return err
	} else if u64(done) == epoch {
		seen = nil // sent before a restart
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
	return nil
}

// spoolQueued is step 2 of a hand-off: the queued URLs of moved hosts.
func (m *Member) spoolQueued(notMine func(string) bool, fetched, hosts map[string]bool, st *HandoffStats, saveStats func() error) error {
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
