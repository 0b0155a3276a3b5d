package fetcher

import (
	"sync"
	"time"
)

// robotsCache is a bounded LRU of rules per scheme://host with in-flight
// tracking. Entries outlive their expiry (until evicted) so that the last
// good copy and the start of an outage are remembered. Safe for concurrent
// use. The LRU list runs through the entries themselves (no container/list
// element beside each): the cache holds one entry per host seen, up to
// RobotsCacheSize, so its bytes per entry are a crawl's RSS per host.
type robotsCache struct {
	size       int
	mu         sync.Mutex
	m          map[string]*robotsEntry
	head, tail *robotsEntry             // most and least recently used
	busy       map[string]chan struct{} // fetches in flight
}

type robotsEntry struct {
	key        string
	rules      *RobotsRules
	lastGood   *RobotsRules // last RobotsParsed or RobotsAllowAll
	downSince  time.Time    // start of the current outage, or zero
	failures   int          // consecutive failed fetches
	prev, next *robotsEntry // LRU neighbours: prev is more recently used
}

func newRobotsCache(size int) *robotsCache {
	return &robotsCache{size: size, m: make(map[string]*robotsEntry), busy: make(map[string]chan struct{})}
}

func (c *robotsCache) unlinkLocked(e *robotsEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (c *robotsCache) pushFrontLocked(e *robotsEntry) {
	e.prev, e.next = nil, c.head
	if c.head != nil {
		c.head.prev = e
	} else {
		c.tail = e
	}
	c.head = e
}

func (c *robotsCache) touchLocked(e *robotsEntry) {
	if c.head != e {
		c.unlinkLocked(e)
		c.pushFrontLocked(e)
	}
}

// addLocked inserts e as the most recently used entry and evicts the least
// recently used beyond the size; it returns how many it evicted.
func (c *robotsCache) addLocked(e *robotsEntry) int {
	c.m[e.key] = e
	c.pushFrontLocked(e)
	n := 0
	for len(c.m) > c.size {
		old := c.tail
		c.unlinkLocked(old)
		delete(c.m, old.key)
		n++
	}
	return n
}

// lookup returns fresh rules, or marks a fetch in flight: mine reports that
// the caller must fetch (and then store or abandon), prev being the expired
// rules if any; otherwise wait closes when the other fetch ends.
func (c *robotsCache) lookup(key string, now time.Time) (r *RobotsRules, wait <-chan struct{}, mine bool, prev *RobotsRules) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		if now.Before(e.rules.Expires) {
			c.touchLocked(e)
			return e.rules, nil, false, nil
		}
		prev = e.rules
	}
	if ch, ok := c.busy[key]; ok {
		return nil, ch, false, nil
	}
	c.busy[key] = make(chan struct{})
	return nil, nil, true, prev
}

func (c *robotsCache) peek(key string, now time.Time) *RobotsRules {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && now.Before(e.rules.Expires) {
		return e.rules
	}
	return nil
}

func (c *robotsCache) abandon(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked(key)
}

func (c *robotsCache) releaseLocked(key string) {
	if ch, ok := c.busy[key]; ok {
		close(ch)
		delete(c.busy, key)
	}
}

// store records a fetch outcome, applying the RFC's fallback for long
// outages, and returns the rules to use.
func (c *robotsCache) store(key string, r *RobotsRules, now time.Time, o *Options, st *stats) *RobotsRules {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.releaseLocked(key)
	e, ok := c.m[key]
	if ok {
		c.touchLocked(e)
	} else {
		e = &robotsEntry{key: key}
		if n := c.addLocked(e); n > 0 {
			st.robotsEvictions.add(int64(n))
		}
	}
	r.Fetched = now
	switch r.Outcome {
	case RobotsDeferred:
		// Waiting for another host's slot is no failure of this one: the
		// outage state and the last good copy stay as they are.
		r.Retry, r.Expires = true, time.Time{}
		if r.deferred != nil {
			r.Expires = r.deferred.retryAt
		}
		if !r.Expires.After(now) {
			r.Expires = now.Add(time.Millisecond)
		}
	case RobotsUnreachable:
		st.robotsUnreachable.add(1)
		if e.downSince.IsZero() {
			e.downSince = now
		}
		e.failures++
		r.Expires = now.Add(o.RobotsErrorTTL)
		// A refused address is the guard's verdict, not an outage: an
		// attempt seconds later would be refused again. So is a TLS
		// failure (an untrusted, expired or misnamed certificate, a
		// handshake alert, no TLS at all): retrying it at 5 and 15 s only
		// delayed the verdict by 15 s and hid its cause. The host's URLs
		// are not lost: the caller logs each as robots-unreachable (with
		// Err), and robots.txt is tried again after RobotsErrorTTL.
		if e.failures < o.RobotsAttempts && !robotsPermanent(r.Err) {
			r.Retry, r.Expires = true, now.Add(o.RobotsRetryDelay<<(e.failures-1))
		}
		if now.Sub(e.downSince) >= o.RobotsUnreachable {
			fb := &RobotsRules{Outcome: RobotsStaleFallback, Status: r.Status, Err: r.Err,
				Fetched: now, Expires: r.Expires}
			if e.lastGood != nil {
				fb.rules, fb.Sitemaps, fb.Truncated = e.lastGood.rules, e.lastGood.Sitemaps, e.lastGood.Truncated
				if e.lastGood.Outcome == RobotsAllowAll {
					fb.rules = agentRules{crawlDelay: -1}
				}
			} else {
				fb.rules = agentRules{crawlDelay: -1}
			}
			r = fb
		}
	default:
		if r.Outcome == RobotsParsed {
			st.robotsRules.add(1)
		} else {
			st.robotsAllowAll.add(1)
		}
		e.downSince, e.failures = time.Time{}, 0
		e.lastGood = r
		r.Expires = now.Add(o.RobotsCacheTTL)
	}
	e.rules = r
	return r
}
