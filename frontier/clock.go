package frontier

import (
	"sync"
	"time"
)

// ManualClock is a Clock whose time moves only when Advance or Set is
// called; tests and simulations use it to drive politeness deterministically.
// It is safe for concurrent use.
type ManualClock struct {
	mu struct {
		sync.Mutex
		now     time.Time
		waiters []manualWaiter
	}
}

type manualWaiter struct {
	at time.Time
	ch chan time.Time
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	c := &ManualClock{}
	c.mu.now = start
	return c
}

// Now implements Clock.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.now
}

// After implements Clock: the channel fires when the clock is moved to or
// past now+d.
func (c *ManualClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := c.mu.now.Add(d)
	if d <= 0 {
		ch <- c.mu.now
		return ch
	}
	c.mu.waiters = append(c.mu.waiters, manualWaiter{at: at, ch: ch})
	return ch
}

// Advance moves the clock forward by d and fires the timers that are due.
func (c *ManualClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never backwards) and fires the timers that are due.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.mu.now) {
		c.mu.now = t
	}
	kept := c.mu.waiters[:0]
	for _, w := range c.mu.waiters {
		if !w.at.After(c.mu.now) {
			w.ch <- c.mu.now
		} else {
			kept = append(kept, w)
		}
	}
	c.mu.waiters = kept
}
