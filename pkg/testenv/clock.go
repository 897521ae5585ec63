package testenv

import (
	"sync"
	"time"
)

// Clock is a test's clock: the real time shifted by what Advance added, or, once Set, a stopped
// clock at the time set (Advance moves it on). It serves both as a func() time.Time (Now) and as
// a clock.PassiveClock (Now, Since). Requeues still wait real time.
type Clock struct {
	mu      sync.Mutex
	offset  time.Duration
	stopped *time.Time
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped != nil {
		return *c.stopped
	}
	return time.Now().Add(c.offset)
}

// Since is Now().Sub(t).
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped != nil {
		*c.stopped = c.stopped.Add(d)
		return
	}
	c.offset += d
}

// Set stops the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = &t
}

// StoppedClock returns a Clock stopped at t.
func StoppedClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}
