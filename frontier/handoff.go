package frontier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Hand-off of hosts to another node (cluster membership changes, see
// internal/crawl/elastic.go). It works in two steps so that a crash cannot
// hand a URL over twice:
//
//  1. Stage moves, in one atomic write, every queued URL of the hosts to hand
//     over out of the queues into a staging area (keys "h" <seq:8>, the
//     frontier's own sequence numbers, so staged URLs keep their order).
//  2. The caller reads the staging area in order (Staged), makes each chunk
//     durable elsewhere together with the highest staged seq it covers (its
//     own mark), then Unstages up to that seq. After a crash it resumes from
//     its mark: nothing is sent twice and nothing is lost.
//
// Staged URLs are no longer queued: Len, Idle and Next ignore them.

const prefixStaged = 'h'

func stagedKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixStaged}, seq)
}

// StagedItem is a URL in the staging area with its staging seq.
type StagedItem struct {
	Seq uint64
	Item
}

// Stage moves every queued URL whose host satisfies move into the staging
// area, atomically, and returns how many it moved. No lease may be
// outstanding (stop the workers first): otherwise it returns an error and
// changes nothing. The frontier's in-memory queues are rebuilt from disk
// afterwards, as on Open.
func (f *Frontier) Stage(move func(host string) bool) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return 0, err
	}
	if len(f.mu.leases) > 0 {
		return 0, fmt.Errorf("frontier: Stage with %d leases outstanding", len(f.mu.leases))
	}
	b := f.db.NewBatch()
	moved, frontMoved := 0, 0
	seq := f.mu.nextSeq
	scan := func(lo, hi []byte, front bool) error {
		it, err := f.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			item, err := decodeEntry(it.Value())
			if err != nil {
				it.Close()
				return err
			}
			if !move(item.Host) {
				continue
			}
			_ = b.Delete(it.Key(), nil)
			_ = b.Set(stagedKey(seq), it.Value(), nil)
			seq++
			moved++
			if front {
				frontMoved++
			}
		}
		return it.Close()
	}
	// Back queues first (they hold each host's oldest URLs), then the
	// front queues in priority order.
	err := scan([]byte{prefixHost}, []byte{prefixHost + 1}, false)
	if err == nil {
		err = scan([]byte{prefixFront}, []byte{prefixFront + 1}, true)
	}
	if err != nil || moved == 0 {
		b.Close()
		if err != nil {
			return 0, fmt.Errorf("frontier: stage: %w", err)
		}
		return 0, nil
	}
	if _, err := f.commitLocked(b, false, f.mu.count-int64(moved), f.mu.frontKeys-int64(frontMoved), seq); err != nil {
		return 0, err
	}
	if err := f.db.LogData(nil, pebble.Sync); err != nil { // durable before anything depends on it
		f.mu.broken = fmt.Errorf("frontier: stage: %w", err)
		return 0, f.mu.broken
	}
	// Rebuild the in-memory queues and the politeness heap from disk.
	f.mu.sched = newScheduler(&f.opts)
	f.mu.front = [256]headQueue{}
	f.mu.minPrio = 0
	if err := f.recover(); err != nil {
		f.mu.broken = fmt.Errorf("frontier: stage: %w", err)
		return 0, f.mu.broken
	}
	f.notifyLocked()
	return moved, nil
}

// Staged returns up to max staged URLs with seq > after, in seq order.
func (f *Frontier) Staged(after uint64, max int) ([]StagedItem, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return nil, err
	}
	it, err := f.db.NewIter(&pebble.IterOptions{LowerBound: stagedKey(after + 1), UpperBound: []byte{prefixStaged + 1}})
	if err != nil {
		return nil, err
	}
	var out []StagedItem
	for ok := it.First(); ok && len(out) < max; ok = it.Next() {
		k := it.Key()
		if len(k) != 9 {
			it.Close()
			return nil, errCorrupt
		}
		item, err := decodeEntry(it.Value())
		if err != nil {
			it.Close()
			return nil, err
		}
		out = append(out, StagedItem{Seq: binary.BigEndian.Uint64(k[1:]), Item: item})
	}
	return out, it.Close()
}

// Unstage forgets the staged URLs with seq ≤ upTo.
func (f *Frontier) Unstage(upTo uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return err
	}
	if err := f.db.DeleteRange([]byte{prefixStaged}, stagedKey(upTo+1), pebble.Sync); err != nil {
		f.mu.broken = fmt.Errorf("frontier: unstage: %w", err)
		return f.mu.broken
	}
	return nil
}

// QueuedHosts returns the hosts with at least one queued URL (leases
// excluded), for reports. It reads the whole frontier from disk.
func (f *Frontier) QueuedHosts() (map[string]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for _, p := range []byte{prefixHost, prefixFront} {
		it, err := f.db.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
		if err != nil {
			return nil, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			if p == prefixHost {
				k := it.Key()
				if i := strings.IndexByte(string(k), 0); i > 0 {
					out[string(k[1:i])]++
				}
				continue
			}
			item, err := decodeEntry(it.Value())
			if err != nil {
				it.Close()
				return nil, err
			}
			out[item.Host]++
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AddAdmitted adds counts (site → URLs) to the sites' admitted counts under
// Options.HostBudget, exactly once per (source, seq) like AddBatch, with
// which it shares the per-source sequence: the receiver of a hand-off
// counts the URLs the old owner already fetched, so a host's budget holds
// across a change of owner. Without a budget it only records seq.
func (f *Frontier) AddAdmitted(source string, seq uint64, counts map[string]int) error {
	if source == "" {
		return fmt.Errorf("frontier: AddAdmitted with empty source")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return err
	}
	last, err := f.appliedLocked(source)
	if err != nil {
		return err
	}
	if seq <= last {
		f.mu.stats.IgnoredBatches++
		return nil
	}
	if err := f.flushDoneLocked(); err != nil { // writes stay in order
		return err
	}
	b := f.db.NewBatch()
	defer b.Close()
	added := map[string]uint64{}
	if f.opts.HostBudget.enabled() {
		var buf []byte
		for site, n := range counts {
			if n <= 0 {
				continue
			}
			cur, err := f.admittedLocked(site)
			if err != nil {
				return err
			}
			added[site] = cur + uint64(n)
			buf = binary.AppendUvarint(buf[:0], added[site])
			b.Set(budgetKey(site), buf, nil)
		}
	}
	b.Set(applyKey(source), encodeU64(seq), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		f.mu.broken = fmt.Errorf("frontier: write failed: %w", err)
		return f.mu.broken
	}
	f.cacheAdmittedLocked(added)
	f.mu.applied[source] = seq
	return nil
}

// ForgetAdmitted deletes the admitted count of every site for which drop
// is true (hosts handed over to another node, which now holds their
// count): if a site comes back, the count it brings replaces a stale one
// instead of adding to it. It returns how many counts it deleted.
func (f *Frontier) ForgetAdmitted(drop func(site string) bool) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return 0, err
	}
	if err := f.flushDoneLocked(); err != nil {
		return 0, err
	}
	it, err := f.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixBudget}, UpperBound: []byte{prefixBudget + 1}})
	if err != nil {
		return 0, err
	}
	var sites []string
	for ok := it.First(); ok; ok = it.Next() {
		if site := string(it.Key()[1:]); drop(site) {
			sites = append(sites, site)
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return 0, err
	}
	b := f.db.NewBatch()
	defer b.Close()
	for _, site := range sites {
		b.Delete(budgetKey(site), nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		f.mu.broken = fmt.Errorf("frontier: write failed: %w", err)
		return 0, f.mu.broken
	}
	for _, site := range sites {
		delete(f.mu.admitted, site)
	}
	return len(sites), nil
}
