package main

import "container/heap"

// politeSched is a Mercator-like frontier for the emulation: one queue per
// host, ordered by the crawl order's key, and a host may be fetched again
// only gap fetches after its last fetch (politeness: the crawler spreads
// its fetches over many hosts). Among the hosts allowed, the one whose head
// URL has the best key goes next. Entries are validated lazily: valid(fp,
// prio) says whether a queued item is still current.
type politeSched struct {
	gap   int
	t     int // fetches so far (the virtual clock)
	idle  int // times every queued host was resting and the clock jumped
	hosts map[string]*phost
	ready hostHeap // candidate hosts by head key (lazy)
	wait  waitHeap // hosts resting after a fetch, by readyAt
	valid func(fp uint64, prio int) bool
}

type phost struct {
	name    string
	q       pq
	readyAt int
	resting bool
}

func newPoliteSched(gap int, valid func(uint64, int) bool) *politeSched {
	return &politeSched{gap: gap, hosts: map[string]*phost{}, valid: valid}
}

func (s *politeSched) push(host string, it pqItem) {
	h := s.hosts[host]
	if h == nil {
		h = &phost{name: host}
		s.hosts[host] = h
	}
	heap.Push(&h.q, it)
	if !h.resting {
		heap.Push(&s.ready, hostEntry{h: h, prio: it.prio, order: it.order})
	}
}

// head drops h's stale items and returns its current head.
func (s *politeSched) head(h *phost) (pqItem, bool) {
	for h.q.Len() > 0 {
		if it := h.q[0]; s.valid(it.fp, it.prio) {
			return it, true
		}
		heap.Pop(&h.q)
	}
	return pqItem{}, false
}

func (s *politeSched) pop() (pqItem, bool) {
	for {
		for s.wait.Len() > 0 && s.wait[0].readyAt <= s.t {
			h := heap.Pop(&s.wait).(waitEntry).h
			h.resting = false
			if it, ok := s.head(h); ok {
				heap.Push(&s.ready, hostEntry{h: h, prio: it.prio, order: it.order})
			}
		}
		for s.ready.Len() > 0 {
			e := heap.Pop(&s.ready).(hostEntry)
			if e.h.resting {
				continue
			}
			it, ok := s.head(e.h)
			if !ok {
				continue
			}
			if it.prio != e.prio || it.order != e.order {
				heap.Push(&s.ready, hostEntry{h: e.h, prio: it.prio, order: it.order})
				continue
			}
			heap.Pop(&e.h.q)
			s.t++
			e.h.resting = true
			heap.Push(&s.wait, waitEntry{h: e.h, readyAt: s.t + s.gap})
			return it, true
		}
		if s.wait.Len() == 0 {
			return pqItem{}, false
		}
		s.t = s.wait[0].readyAt // every host is resting: idle until one is allowed
		s.idle++
	}
}

type hostEntry struct {
	h           *phost
	prio, order int
}

type hostHeap []hostEntry

func (p hostHeap) Len() int { return len(p) }
func (p hostHeap) Less(i, j int) bool {
	if p[i].prio != p[j].prio {
		return p[i].prio > p[j].prio
	}
	return p[i].order < p[j].order
}
func (p hostHeap) Swap(i, j int) { p[i], p[j] = p[j], p[i] }
func (p *hostHeap) Push(x any)   { *p = append(*p, x.(hostEntry)) }
func (p *hostHeap) Pop() any {
	old := *p
	it := old[len(old)-1]
	*p = old[:len(old)-1]
	return it
}

type waitEntry struct {
	h       *phost
	readyAt int
}

type waitHeap []waitEntry

func (p waitHeap) Len() int           { return len(p) }
func (p waitHeap) Less(i, j int) bool { return p[i].readyAt < p[j].readyAt }
func (p waitHeap) Swap(i, j int)      { p[i], p[j] = p[j], p[i] }
func (p *waitHeap) Push(x any)        { *p = append(*p, x.(waitEntry)) }
func (p *waitHeap) Pop() any {
	old := *p
	it := old[len(old)-1]
	*p = old[:len(old)-1]
	return it
}
