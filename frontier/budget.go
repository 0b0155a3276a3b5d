package frontier

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Budget bounds the URLs admitted per site over a whole crawl: the trap
// defence of IRLbot's BEAST (Lee et al., WWW 2008), which prefers slowing a
// suspicious site to dropping it. The first Soft URLs of a site keep their
// priority; the next ones, up to Hard, are queued at LowPriority or lower,
// so they are crawled only when nothing better is queued; later ones are
// dropped. Zero Soft or Hard means no such limit.
//
// The count of a site is stored in pebble in the same batch that queues its
// URLs, so the budget holds across restarts and kill -9: an AddBatch
// re-delivered after a crash is ignored together with its counts.
type Budget struct {
	Soft, Hard int
	// LowPriority is the front queue of URLs over the soft budget. Default 1.
	LowPriority uint8
}

func (b *Budget) enabled() bool { return b.Soft > 0 || b.Hard > 0 }

func (b *Budget) validate() error {
	var errs []error
	if b.Soft < 0 || b.Hard < 0 {
		errs = append(errs, fmt.Errorf("HostBudget: negative budget (Soft %d, Hard %d)", b.Soft, b.Hard))
	}
	if b.Soft > 0 && b.Hard > 0 && b.Soft > b.Hard {
		errs = append(errs, fmt.Errorf("HostBudget: Soft %d > Hard %d", b.Soft, b.Hard))
	}
	return errors.Join(errs...)
}

// admittedCacheSize bounds Frontier.mu.admitted; counts beyond it are read
// back from pebble (one point read per site and batch).
const admittedCacheSize = 1 << 17

// budgetKey is the pebble key of a site's admitted count. Its prefix sorts
// after the front queues (see keys.go) like the other keys rewritten often.
func budgetKey(site string) []byte { return append([]byte{prefixBudget}, site...) }

// Admitted returns the number of URLs of site admitted under the budget so
// far (0 without a budget). site is an Item's Site, or its Host if Site is
// empty.
func (f *Frontier) Admitted(site string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return 0, err
	}
	n, err := f.admittedLocked(site)
	return int(n), err
}

func (f *Frontier) admittedLocked(site string) (uint64, error) {
	if n, ok := f.mu.admitted[site]; ok {
		return n, nil
	}
	v, c, err := f.db.Get(budgetKey(site))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer c.Close()
	n, k := binary.Uvarint(v)
	if k <= 0 || k != len(v) {
		return 0, errCorrupt
	}
	return n, nil
}

// budgetLocked applies the budget to items: it returns the admitted ones
// (over the soft budget: at LowPriority or lower) and writes the sites' new
// counts into b. The counts to cache once b is committed are returned.
func (f *Frontier) budgetLocked(b *pebble.Batch, items []Item) ([]Item, map[string]uint64, error) {
	bo := &f.opts.HostBudget
	rules := f.mu.sched.rules
	if !bo.enabled() && !rules.anyMaxPages() {
		return items, nil, nil
	}
	out := make([]Item, 0, len(items))
	counts := make(map[string]uint64)
	var dropped, lowered uint64
	for i := range items {
		it := items[i]
		if it.Revisit {
			out = append(out, it)
			continue
		}
		site := it.Site
		if site == "" {
			site = it.Host
		}
		n, ok := counts[site]
		if !ok {
			var err error
			if n, err = f.admittedLocked(site); err != nil {
				return nil, nil, err
			}
		}
		hard := bo.Hard
		if mp := rules.maxPages(site); mp > 0 {
			hard = mp // an operator's run-time page budget (hostrules.go)
		}
		switch {
		case hard > 0 && n >= uint64(hard):
			counts[site] = n
			dropped++
			continue
		case bo.Soft > 0 && n >= uint64(bo.Soft):
			it.Priority = max(it.Priority, bo.LowPriority)
			lowered++
		}
		counts[site] = n + 1
		out = append(out, it)
	}
	var buf []byte
	for site, n := range counts {
		buf = binary.AppendUvarint(buf[:0], n)
		b.Set(budgetKey(site), buf, nil)
	}
	f.mu.stats.BudgetDropped += dropped
	f.mu.stats.BudgetLowered += lowered
	return out, counts, nil
}

// cacheAdmittedLocked records committed counts in the bounded cache.
func (f *Frontier) cacheAdmittedLocked(counts map[string]uint64) {
	for site, n := range counts {
		if _, ok := f.mu.admitted[site]; !ok && len(f.mu.admitted) >= admittedCacheSize {
			for k := range f.mu.admitted { // evict an arbitrary entry
				delete(f.mu.admitted, k)
				break
			}
		}
		f.mu.admitted[site] = n
	}
}
