package extract

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// Priority is HostBudget's verdict on one more URL for a host.
type Priority uint8

const (
	PriorityNormal Priority = iota // within the soft budget
	PriorityLow                    // over the soft budget: crawl only when nothing better is queued
	PriorityDrop                   // over the hard budget: do not crawl
)

func (p Priority) String() string {
	switch p {
	case PriorityNormal:
		return "normal"
	case PriorityLow:
		return "low"
	case PriorityDrop:
		return "drop"
	}
	return fmt.Sprintf("Priority(%d)", uint8(p))
}

// BudgetOptions configure a HostBudget.
type BudgetOptions struct {
	// Soft is the number of URLs per host admitted at normal priority;
	// later ones are admitted at PriorityLow. 0 = no soft budget.
	Soft int
	// Hard is the number of URLs per host admitted at all; later ones are
	// dropped. 0 = unlimited.
	Hard int
	// Shards of the host table (lock striping); default 64.
	Shards int
}

// EnsureDefaults fills zero fields with their defaults.
func (o *BudgetOptions) EnsureDefaults() {
	if o.Shards == 0 {
		o.Shards = 64
	}
}

// Validate reports every invalid field.
func (o *BudgetOptions) Validate() error {
	var errs []error
	if o.Soft < 0 || o.Hard < 0 || o.Shards < 0 {
		errs = append(errs, fmt.Errorf("%w: negative budget (Soft %d, Hard %d, Shards %d)", ErrInvalidOptions, o.Soft, o.Hard, o.Shards))
	}
	if o.Soft > 0 && o.Hard > 0 && o.Soft > o.Hard {
		errs = append(errs, fmt.Errorf("%w: Soft %d > Hard %d", ErrInvalidOptions, o.Soft, o.Hard))
	}
	return errors.Join(errs...)
}

// HostBudget is the per-host page budget that contains crawler traps
// (calendars, session ids, endless generated links). Following IRLbot's
// BEAST (Lee et al., WWW 2008) it prefers slowing a suspicious host to
// dropping it: the first Soft URLs of a host get normal priority, the next
// ones up to Hard get PriorityLow — the frontier should put them in a
// lower-priority front queue, so they are crawled only when the rest of
// the web is exhausted — and only beyond Hard are URLs dropped. (BEAST also
// scales each domain's budget with its in-degree from other domains; here
// budgets are static.)
//
// Call Admit once per new URL (after the URL-seen test, so duplicates do
// not use budget). Memory: one 8-byte host fingerprint and a 4-byte count
// per host (about 40 bytes with map overhead), independent of the host
// name's length and of how many URLs the host has. Counts live in memory
// only: after a restart budgets start again from zero.
//
// Safe for concurrent use; needs no Close.
type HostBudget struct {
	opts   BudgetOptions
	shards []budgetShard
	stats  [3]atomic.Uint64
}

type budgetShard struct {
	mu sync.Mutex
	m  map[uint64]uint32
	_  [40]byte // keep shards on separate cache lines
}

// NewHostBudget returns a HostBudget for opts (copied; zero fields get
// defaults).
func NewHostBudget(opts BudgetOptions) (*HostBudget, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	b := &HostBudget{opts: opts, shards: make([]budgetShard, opts.Shards)}
	for i := range b.shards {
		b.shards[i].m = make(map[uint64]uint32)
	}
	return b, nil
}

// Admit counts one more URL for host and returns its priority. A dropped
// URL does not count.
func (b *HostBudget) Admit(host string) Priority {
	h := xxhash.Sum64String(host)
	s := &b.shards[h%uint64(len(b.shards))]
	s.mu.Lock()
	n := s.m[h]
	p := PriorityNormal
	switch {
	case b.opts.Hard > 0 && int(n) >= b.opts.Hard:
		p = PriorityDrop
	case b.opts.Soft > 0 && int(n) >= b.opts.Soft:
		p = PriorityLow
	}
	if p != PriorityDrop && n < ^uint32(0) {
		s.m[h] = n + 1
	}
	s.mu.Unlock()
	b.stats[p].Add(1)
	return p
}

// Take is Admit reduced to a yes/no: false iff the hard budget is spent.
func (b *HostBudget) Take(host string) bool { return b.Admit(host) != PriorityDrop }

// Count returns how many URLs host has been admitted.
func (b *HostBudget) Count(host string) int {
	h := xxhash.Sum64String(host)
	s := &b.shards[h%uint64(len(b.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.m[h])
}

// BudgetStats are HostBudget's counters.
type BudgetStats struct {
	Hosts                int    // hosts seen
	Normal, Low, Dropped uint64 // Admit verdicts so far
}

// Stats returns a snapshot of the counters.
func (b *HostBudget) Stats() BudgetStats {
	st := BudgetStats{
		Normal:  b.stats[PriorityNormal].Load(),
		Low:     b.stats[PriorityLow].Load(),
		Dropped: b.stats[PriorityDrop].Load(),
	}
	for i := range b.shards {
		s := &b.shards[i]
		s.mu.Lock()
		st.Hosts += len(s.m)
		s.mu.Unlock()
	}
	return st
}
