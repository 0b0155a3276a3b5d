package frontier

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"
)

// TestModel runs random operation sequences against a Frontier and a
// simple in-memory model, checking after every step: no URL is lost or
// invented, never two leases on one host, no lease before the host's
// politeness delay (computed independently by the model), per-host FIFO
// within a priority, AddBatch idempotence, and liveness — when TryNext finds
// nothing, no host with queued URLs is free and ready. Restarts are part of
// the sequence: leased URLs come back after one.
func TestModel(t *testing.T) {
	seeds, ops := 20, 400
	if os.Getenv("SEXTANT_LONG") != "" {
		seeds, ops = 200, 1000
	}
	if os.Getenv("MSEED") != "" {
		var sd int
		fmt.Sscan(os.Getenv("MSEED"), &sd)
		runModel(t, uint64(sd), 2000)
		return
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, uint64(seed), ops) })
	}
}

type modelHost struct {
	next     time.Time
	failures int
	leased   bool
}

type modelURL struct {
	item     Item
	order    int  // addition order, for the FIFO check
	unorderd bool // requeued or restarted: excluded from the FIFO check
}

func runModel(t *testing.T, seed uint64, ops int) {
	m := newModel(t, seed)
	defer func() { m.f.Close() }()
	for step := range ops {
		switch op := m.rng.IntN(100); {
		case op < 25: // add a batch (sometimes re-deliver an old one)
			if !m.addBatch(step) {
				continue
			}
		case op < 60:
			m.next(step)
		case op < 85:
			m.done()
		case op < 99:
			m.clock.Advance(time.Duration(m.rng.IntN(100)) * time.Millisecond)
		default: // restart: leases come back
			m.restart(step)
		}
		m.check(step, "op")
	}
	m.drain()
}

// model is the frontier under test and the model it is checked against.
type model struct {
	t         *testing.T
	rng       *rand.Rand
	dir       string
	clock     *ManualClock
	o         Options
	f         *Frontier
	hosts     map[string]*modelHost
	queued    map[string]*modelURL // by URL (URLs are unique)
	leases    map[string]Lease     // by URL
	lastOrder map[string]int       // host/prio → order of the last ordered lease
	nURL      int
	batchSeq  uint64
	batches   [][]Item
}

func newModel(t *testing.T, seed uint64) *model {
	rng := rand.New(rand.NewPCG(seed, 42))
	dir := t.TempDir()
	clock := NewManualClock(epoch)
	o := Options{
		Clock:             clock,
		BackQueues:        1 + rng.IntN(3),
		MaxBackQueues:     1000,
		Factor:            10,
		MinDelay:          time.Duration(rng.IntN(2)) * 5 * time.Millisecond,
		MaxDelay:          200 * time.Millisecond,
		MaxCrawlDelay:     100 * time.Millisecond,
		FailureBackoff:    50 * time.Millisecond,
		MaxFailureBackoff: 400 * time.Millisecond,
	}
	f, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return &model{t: t, rng: rng, dir: dir, clock: clock, o: o, f: f, hosts: map[string]*modelHost{},
		queued: map[string]*modelURL{}, leases: map[string]Lease{}, lastOrder: map[string]int{}}
}

// delay is the politeness delay the model expects after r.
func (m *model) delay(h *modelHost, r Result) time.Duration {
	o := m.o
	d := max(time.Duration(10*float64(r.Duration)), o.MinDelay)
	d = min(d, o.MaxDelay)
	d = max(d, min(r.CrawlDelay, o.MaxCrawlDelay))
	if h.failures > 0 {
		b := o.FailureBackoff
		for i := 1; i < h.failures; i++ {
			b = min(2*b, o.MaxFailureBackoff)
		}
		d = max(d, b)
	}
	return d
}

func (m *model) check(step int, what string) {
	t, f, queued, leases := m.t, m.f, m.queued, m.leases
	t.Helper()
	if got, want := f.Len(), len(queued); got != want {
		t.Fatalf("step %d (%s): Len %d, model %d", step, what, got, want)
	}
	if got, want := f.InFlight(), len(leases); got != want {
		t.Fatalf("step %d (%s): InFlight %d, model %d", step, what, got, want)
	}
}

// lease checks a lease against the model and records it.
func (m *model) lease(step int, l Lease) {
	t, clock, hosts, queued, leases, lastOrder := m.t, m.clock, m.hosts, m.queued, m.leases, m.lastOrder
	t.Helper()
	now := clock.Now()
	u, ok := queued[l.URL]
	if !ok {
		t.Fatalf("step %d: leased %s, which is not queued", step, l.URL)
	}
	h := hosts[l.Host]
	if h.leased {
		t.Fatalf("step %d: second lease on %s", step, l.Host)
	}
	if now.Before(h.next) {
		t.Fatalf("step %d: %s leased at %v, before %v", step, l.Host, now.Sub(epoch), h.next.Sub(epoch))
	}
	if u.item != l.Item {
		t.Fatalf("step %d: lease item %+v, added %+v", step, l.Item, u.item)
	}
	key := fmt.Sprint(l.Host, "/", l.Priority)
	if !u.unorderd {
		if u.order < lastOrder[key] {
			t.Fatalf("step %d: %s leased after a later URL of its host and priority", step, l.URL)
		}
		lastOrder[key] = u.order
	}
	h.leased = true
	if os.Getenv("MSEED") != "" && l.Host == os.Getenv("MHOST") {
		t.Logf("step %d lease %s p%d order %d unordered %v", step, l.URL, l.Priority, u.order, u.unorderd)
	}
	delete(queued, l.URL)
	leases[l.URL] = l
}

// addBatch adds a batch, or re-delivers an old one (then it has checked and
// returns false).
func (m *model) addBatch(step int) bool {
	t, rng, f, hosts, queued := m.t, m.rng, m.f, m.hosts, m.queued
	if len(m.batches) > 0 && rng.IntN(5) == 0 {
		old := uint64(1 + rng.IntN(len(m.batches)))
		if err := f.AddBatch("due", old, m.batches[old-1]); err != nil {
			t.Fatal(err)
		}
		m.check(step, "replay")
		return false
	}
	var b []Item
	for range 1 + rng.IntN(5) {
		host := fmt.Sprintf("h%d", rng.IntN(6))
		m.nURL++
		it := Item{URL: fmt.Sprintf("http://%s/%d", host, m.nURL), Host: host,
			Priority: uint8(rng.IntN(3)), Depth: uint16(rng.IntN(5))}
		b = append(b, it)
		queued[it.URL] = &modelURL{item: it, order: m.nURL}
		if os.Getenv("MSEED") != "" && host == os.Getenv("MHOST") {
			t.Logf("step %d add %s p%d", step, it.URL, it.Priority)
		}
		if hosts[host] == nil {
			hosts[host] = &modelHost{}
		}
	}
	m.batchSeq++
	m.batches = append(m.batches, b)
	if err := f.AddBatch("due", m.batchSeq, b); err != nil {
		t.Fatal(err)
	}
	return true
}

// next leases the next URL if any; if none, no host may be free and ready.
func (m *model) next(step int) {
	t, clock, f, hosts, queued := m.t, m.clock, m.f, m.hosts, m.queued
	l, ok, err := f.TryNext()
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		m.lease(step, l)
		return
	}
	now := clock.Now()
	for _, u := range queued {
		h := hosts[u.item.Host]
		if !h.leased && !now.Before(h.next) {
			t.Fatalf("step %d: TryNext found nothing but %s is free and ready with %s queued",
				step, u.item.Host, u.item.URL)
		}
	}
}

// done completes at most one lease (a random one of the sorted leases,
// or none), with a random result.
func (m *model) done() {
	t, rng, clock, f, hosts, queued, leases := m.t, m.rng, m.clock, m.f, m.hosts, m.queued, m.leases
	urls := slices.Sorted(maps.Keys(leases))
	for _, url := range urls[min(len(urls), rng.IntN(4)):] {
		l := leases[url]
		r := Result{Duration: time.Duration(rng.IntN(30)) * time.Millisecond}
		if rng.IntN(5) == 0 {
			r.CrawlDelay = time.Duration(rng.IntN(300)) * time.Millisecond
		}
		r.Failed = rng.IntN(5) == 0
		r.Requeue = rng.IntN(10) == 0
		if err := f.Done(l, r); err != nil {
			t.Fatal(err)
		}
		h := hosts[l.Host]
		h.leased = false
		if r.Failed {
			h.failures++
		} else {
			h.failures = 0
		}
		h.next = clock.Now().Add(m.delay(h, r))
		delete(leases, url)
		if r.Requeue {
			queued[url] = &modelURL{item: l.Item, unorderd: true}
		}
		break
	}
}

// restart closes and reopens the frontier: leases come back.
func (m *model) restart(step int) {
	t, hosts, queued, leases := m.t, m.hosts, m.queued, m.leases
	if os.Getenv("MSEED") != "" {
		t.Logf("step %d restart", step)
	}
	if err := m.f.Close(); err != nil {
		t.Fatal(err)
	}
	var err error
	if m.f, err = Open(m.dir, m.o); err != nil {
		t.Fatal(err)
	}
	for _, url := range slices.Sorted(maps.Keys(leases)) {
		l := leases[url]
		queued[url] = &modelURL{item: l.Item, unorderd: true}
		hosts[l.Host].leased = false
		delete(leases, url)
	}
}

// drain: everything queued comes out exactly once.
func (m *model) drain() {
	t, clock, f, hosts, queued, leases := m.t, m.clock, m.f, m.hosts, m.queued, m.leases
	for _, url := range slices.Sorted(maps.Keys(leases)) {
		l := leases[url]
		if err := f.Done(l, Result{}); err != nil {
			t.Fatal(err)
		}
		hosts[l.Host].leased = false
		delete(leases, url)
	}
	for range 10000 {
		if len(queued) == 0 {
			break
		}
		clock.Advance(time.Second)
		for {
			l, ok, err := f.TryNext()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if _, ok := queued[l.URL]; !ok {
				t.Fatalf("drain: %s not queued", l.URL)
			}
			delete(queued, l.URL)
			if err := f.Done(l, Result{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(queued) != 0 || !f.Idle() {
		t.Fatalf("after drain: %d URLs left in the model, frontier idle %v", len(queued), f.Idle())
	}
}
