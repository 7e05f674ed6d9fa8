package cuda

import (
	"sync/atomic"
	"time"
)

// liveness keeps a driver object (a context, stream, event or module) alive
// while calls use it: enter before passing its handle to the driver, exit
// after; end marks it dead and waits for the calls inside to leave, so the
// handle is never destroyed under a running call and never used after.
// A call costs two uncontended atomic adds.
type liveness struct {
	n atomic.Int64 // deadBit | number of calls inside
}

const deadBit = 1 << 62

// enter reports whether the object is alive; if so the caller must exit.
func (l *liveness) enter() bool {
	if l.n.Add(1)&deadBit != 0 {
		l.n.Add(-1)
		return false
	}
	return true
}

func (l *liveness) exit() { l.n.Add(-1) }

// dead reports whether end was called.
func (l *liveness) dead() bool { return l.n.Load()&deadBit != 0 }

// end marks the object dead and waits until no call is inside. It reports
// false if the object was already dead. Calls inside may block in the driver
// (a stream synchronization), so it sleeps rather than spins.
func (l *liveness) end() bool {
	for {
		v := l.n.Load()
		if v&deadBit != 0 {
			return false
		}
		if l.n.CompareAndSwap(v, v|deadBit) {
			break
		}
	}
	for wait := time.Microsecond; l.n.Load() != deadBit; wait = min(2*wait, time.Millisecond) {
		time.Sleep(wait)
	}
	return true
}
