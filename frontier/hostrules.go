package frontier

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Host rules: an operator's run-time pauses, blocks and politeness
// overrides (issue 28). A host a pause or a block matches is parked: it
// keeps its back queue and its URLs stay on disk, but it is out of the
// scheduler's heap, so Next never leases it and Borrow never lends its
// slot. Lifting the rule puts it back in the heap (waking waiting Next
// calls). Pause and block differ only in what they mean to the operator
// (and in which counter holds their URLs): "not now" against "not this
// host". The rules live in memory; their owner persists them.

// ErrInvalidRule: a rule names no host or domain, or a bad override.
var ErrInvalidRule = errors.New("frontier: invalid host rule")

// Match selects hosts: Host one host (a politeness key, or its host name
// without the port), Domain every host under a domain (the domain itself
// and its subdomains). Both empty match every host (a pause of the whole
// crawl; blocks must name one).
type Match struct {
	Host   string `json:"host,omitempty"`
	Domain string `json:"domain,omitempty"`
}

// Matches reports whether m selects the politeness key host.
func (m Match) Matches(host string) bool {
	name := strings.ToLower(hostName(host))
	switch {
	case m.Host != "":
		return strings.EqualFold(host, m.Host) || name == strings.ToLower(m.Host)
	case m.Domain != "":
		d := strings.ToLower(strings.TrimPrefix(m.Domain, "."))
		return name == d || strings.HasSuffix(name, "."+d)
	}
	return true
}

func (m Match) String() string {
	switch {
	case m.Host != "":
		return "host " + m.Host
	case m.Domain != "":
		return "domain " + m.Domain
	}
	return "every host"
}

// hostName is a politeness key without its port.
func hostName(key string) string {
	if h, _, err := net.SplitHostPort(key); err == nil {
		return h
	}
	return key
}

// Override replaces a host's politeness settings: a zero field keeps the
// Frontier's. Delay fixes the wait between fetches (still never below the
// robots.txt Crawl-delay nor the failure back-off); Factor replaces
// Options.Factor (FactorSet makes 0 mean 0); MaxPages replaces the hard
// HostBudget of the host (a site key): URLs beyond it are dropped when
// added. Without a HostBudget the count starts when the override is set.
type Override struct {
	Delay     time.Duration `json:"delay,omitempty"`
	Factor    float64       `json:"factor,omitempty"`
	FactorSet bool          `json:"factor_set,omitempty"`
	MaxPages  int           `json:"max_pages,omitempty"`
}

// HostRules is the whole rule set. Overrides are keyed by politeness key
// (or host name).
type HostRules struct {
	Paused    []Match             `json:"paused,omitempty"`
	Blocked   []Match             `json:"blocked,omitempty"`
	Overrides map[string]Override `json:"overrides,omitempty"`
}

// Validate checks r: blocks name a host or a domain, a match names one,
// overrides are not negative.
func (r *HostRules) Validate() error {
	var errs []error
	for _, m := range slices.Concat(r.Paused, r.Blocked) {
		if m.Host != "" && m.Domain != "" {
			errs = append(errs, fmt.Errorf("%w: both host %q and domain %q", ErrInvalidRule, m.Host, m.Domain))
		}
	}
	for _, m := range r.Blocked {
		if m.Host == "" && m.Domain == "" {
			errs = append(errs, fmt.Errorf("%w: a block must name a host or a domain", ErrInvalidRule))
		}
	}
	for h, o := range r.Overrides {
		if h == "" || o.Delay < 0 || o.Factor < 0 || o.MaxPages < 0 {
			errs = append(errs, fmt.Errorf("%w: override of %q: empty host or negative value", ErrInvalidRule, h))
		}
	}
	return errors.Join(errs...)
}

// Clone is a deep copy of r.
func (r HostRules) Clone() HostRules {
	c := HostRules{Paused: slices.Clone(r.Paused), Blocked: slices.Clone(r.Blocked)}
	if len(r.Overrides) > 0 {
		c.Overrides = make(map[string]Override, len(r.Overrides))
		for k, v := range r.Overrides {
			c.Overrides[k] = v
		}
	}
	return c
}

// Why a host is parked.
const (
	Running = ""
	Paused  = "paused"
	Blocked = "blocked"
)

// State is Running, Paused or Blocked for the politeness key host; a block
// wins over a pause.
func (r *HostRules) State(host string) string {
	if r == nil {
		return Running
	}
	for _, m := range r.Blocked {
		if m.Matches(host) {
			return Blocked
		}
	}
	for _, m := range r.Paused {
		if m.Matches(host) {
			return Paused
		}
	}
	return Running
}

// PausedAll reports whether a pause matches every host.
func (r *HostRules) PausedAll() bool {
	return r != nil && slices.Contains(r.Paused, Match{})
}

// override is host's override, by key then by host name.
func (r *HostRules) override(host string) (Override, bool) {
	if r == nil || len(r.Overrides) == 0 {
		return Override{}, false
	}
	if o, ok := r.Overrides[host]; ok {
		return o, true
	}
	o, ok := r.Overrides[hostName(host)]
	return o, ok
}

// optionsFor is o with host's override applied (o itself if none).
func (r *HostRules) optionsFor(host string, o *Options) *Options {
	ov, ok := r.override(host)
	if !ok {
		return o
	}
	c := *o
	if ov.Delay > 0 {
		c.MinDelay, c.MaxDelay = ov.Delay, ov.Delay
	}
	if ov.Factor > 0 || ov.FactorSet {
		c.Factor = ov.Factor
	}
	return &c
}

// maxPages is the hard budget override of site, 0 if none.
func (r *HostRules) maxPages(site string) int {
	o, _ := r.override(site)
	return o.MaxPages
}

// anyMaxPages reports whether some override sets MaxPages.
func (r *HostRules) anyMaxPages() bool {
	if r == nil {
		return false
	}
	for _, o := range r.Overrides {
		if o.MaxPages > 0 {
			return true
		}
	}
	return false
}

// park records whether h is parked under the scheduler's rules and puts
// it in or out of the heap.
func (s *scheduler) park(h *hostState) {
	parked := s.rules.State(h.name) != Running
	if parked != h.parked {
		h.parked = parked
		if parked {
			s.parked++
		} else {
			s.parked--
		}
	}
	s.fix(h)
}

// active is the number of active hosts that are not parked: the ones the
// back-queue targets count.
func (s *scheduler) active() int { return len(s.hosts) - s.parked }

// SetRules replaces the rule set: matching hosts are parked at once (a
// fetch in flight finishes; see ParkedInFlight), hosts no rule matches any
// more may be leased again.
func (f *Frontier) SetRules(r HostRules) error {
	if err := r.Validate(); err != nil {
		return err
	}
	r = r.Clone()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return err
	}
	s := f.mu.sched
	s.rules = &r
	for _, h := range s.hosts {
		s.park(h)
	}
	f.notifyLocked()
	return nil
}

// Rules returns a copy of the rule set.
func (f *Frontier) Rules() HostRules {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.sched.rules == nil {
		return HostRules{}
	}
	return f.mu.sched.rules.Clone()
}

// ParkedInFlight is the number of parked hosts with a fetch still in
// flight: a pause has taken full effect once it is 0.
func (f *Frontier) ParkedInFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, h := range f.mu.sched.hosts {
		if h.parked && (h.leased || h.released > 0) {
			n++
		}
	}
	return n
}

// Held counts the stored URLs (queued or leased) whose host is paused and
// blocked under the current rules. It reads the whole frontier from disk
// (from a consistent view, outside the frontier's lock, so fetching goes
// on meanwhile): call it for status, not per fetch.
func (f *Frontier) Held() (paused, blocked int64, err error) {
	f.mu.Lock()
	if f.mu.sched.rules == nil || len(f.mu.sched.rules.Paused)+len(f.mu.sched.rules.Blocked) == 0 {
		f.mu.Unlock()
		return 0, 0, nil
	}
	r := f.mu.sched.rules.Clone()
	err = f.usableLocked()
	if err == nil {
		err = f.flushDoneLocked()
	}
	var snap *pebble.Snapshot
	if err == nil {
		snap = f.db.NewSnapshot()
	}
	f.mu.Unlock()
	if err != nil {
		return 0, 0, err
	}
	defer snap.Close()
	count := func(host string) {
		switch r.State(host) {
		case Paused:
			paused++
		case Blocked:
			blocked++
		}
	}
	for _, p := range []byte{prefixHost, prefixFront} {
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
		if err != nil {
			return 0, 0, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			if p == prefixHost {
				if k := it.Key(); len(k) > 1 {
					if i := strings.IndexByte(string(k), 0); i > 0 {
						count(string(k[1:i]))
					}
				}
				continue
			}
			item, err := decodeEntry(it.Value())
			if err != nil {
				it.Close()
				return 0, 0, err
			}
			count(item.Host)
		}
		if err := it.Close(); err != nil {
			return 0, 0, err
		}
	}
	return paused, blocked, nil
}
