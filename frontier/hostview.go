package frontier

import (
	"sort"
	"time"
)

// HostInfo is one active host as the frontier sees it: a read-only view
// for status pages.
type HostInfo struct {
	Host     string
	Leased   bool          // a fetch is in flight
	Queued   bool          // URLs wait in its back queue
	Failures int           // consecutive failed fetches (it is backing off)
	Wait     time.Duration // until its next fetch is allowed; 0 if allowed now
}

// MostDelayed returns up to n active hosts that have URLs queued and no
// fetch in flight, the longest politeness (or failure back-off) wait first:
// the hosts the crawl is waiting for. It only reads the in-memory
// scheduler (the active hosts, about BackQueues of them) under the lock.
func (f *Frontier) MostDelayed(n int) []HostInfo {
	if n <= 0 {
		return nil
	}
	f.mu.Lock()
	now := f.opts.Clock.Now()
	out := make([]HostInfo, 0, len(f.mu.sched.hosts))
	for _, h := range f.mu.sched.hosts {
		if h.leased || !h.queued {
			continue
		}
		out = append(out, HostInfo{Host: h.name, Queued: true, Failures: h.failures, Wait: max(h.next.Sub(now), 0)})
	}
	f.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Wait != out[j].Wait {
			return out[i].Wait > out[j].Wait
		}
		return out[i].Host < out[j].Host
	})
	return out[:min(n, len(out))]
}
