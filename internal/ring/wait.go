package ring

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune how an end waits. The zero value takes the defaults.
type Options struct {
	// Spin is how long a waiter polls before it sleeps: long enough to catch
	// the peer's next step without a system call, short enough not to starve
	// the peer of a CPU. Zero means DefaultSpin(); negative, no polling.
	Spin time.Duration
	// Sleep bounds one futex sleep; the waiter then re-checks its own state
	// (so a peer that tampers with the futex word delays, but never strands,
	// a Close). Zero means 100ms.
	Sleep time.Duration
	// OnFull, for a Producer, runs when the ring is full, before the producer
	// sleeps and after each sleep: a client uses it to drain replies that may
	// be what keeps the peer from consuming. It must not write to this ring.
	OnFull func()
	// OnEmpty, for a Consumer, runs when it has polled for Spin and found
	// nothing, before it sleeps and after each sleep: the driver hands over
	// what its serving thread looks after only while it polls.
	OnEmpty func()
	// Yield is what a poller calls between looks; nil: Yield, which lets the
	// kernel run another thread on this CPU but keeps the goroutine's P. A
	// process whose pollers wait for work its own goroutines do (the
	// software GPU's) passes one that lets them have the P too.
	Yield func()
}

const defaultSleep = 100 * time.Millisecond

// LongYield is how long a yield may keep its poller off the CPU before the
// process's poll loops stop yielding for a while (LongYields counts them):
// longer means the kernel ran a thread that keeps the CPU for its slice.
const LongYield = 200 * time.Microsecond

func (o Options) withDefaults() Options {
	if o.Spin == 0 {
		o.Spin = DefaultSpin()
	}
	if o.Sleep <= 0 {
		o.Sleep = defaultSleep
	}
	if o.Yield == nil {
		o.Yield = osYield
	}
	return o
}

// SpinEnv is the environment variable that overrides DefaultSpin: a Go
// duration such as "20us", or "0" for no polling.
const SpinEnv = "GPUOS_RING_SPIN"

// DefaultSpin is the polling time used when Options.Spin is zero:
// $GPUOS_RING_SPIN if set, else 50µs, or none on a machine with one CPU,
// where the peer cannot run while we poll. (A poller yields the CPU between
// polls, so polling costs little on a loaded machine; waking a sleeper costs
// about 5µs per hop on a small VM.)
func DefaultSpin() time.Duration { return defaultSpin() }

var defaultSpin = sync.OnceValue(func() time.Duration {
	if s := os.Getenv(SpinEnv); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			if d == 0 {
				return -1
			}
			return d
		}
	}
	if runtime.NumCPU() < 2 {
		return -1
	}
	return 50 * time.Microsecond
})

// waitUntil returns once ready reports true, or with stop's error. It polls
// for o.Spin, then sleeps on word: it sets word to 1, re-checks ready (the
// other side sets its condition before it looks at word, so one of the two
// sees the other), and sleeps while word stays 1. The other side clears word
// and wakes sleepers (ringBell). exclusive says this waiter is the word's only
// one and may clear it itself once ready, sparing the other side a wake-up;
// shared words are cleared only by the side that wakes. idle, if set, runs
// before each sleep.
func waitUntil(word *atomic.Uint32, o *Options, exclusive bool, ready func() bool, stop func() error, idle func()) error {
	if ready() {
		return nil
	}
	if o.Spin > 0 {
		start := time.Now()
		for i := 1; ; i++ {
			if ready() {
				return nil
			}
			if i&63 == 0 {
				if err := stop(); err != nil {
					return err
				}
				if time.Since(start) >= o.Spin {
					break
				}
				// Let another thread have this CPU if one is waiting for it:
				// the peer may be what we wait for.
				o.Yield()
			}
		}
	}
	for {
		if err := stop(); err != nil {
			return err
		}
		if idle != nil {
			idle()
		}
		word.Store(1)
		if ready() {
			if exclusive {
				word.Store(0)
			}
			return nil
		}
		if err := stop(); err != nil {
			return err
		}
		futexWait(word, 1, o.Sleep)
		if ready() {
			if exclusive {
				word.Store(0)
			}
			return nil
		}
	}
}

// ringBell wakes whoever sleeps on word. It makes a system call only if a
// waiter announced itself.
func ringBell(word *atomic.Uint32) {
	if word.Load() != 0 && word.Swap(0) != 0 {
		futexWake(word)
	}
}

// wakeAll clears word and wakes every sleeper unconditionally, so that a
// waiter about to sleep finds the word changed and re-checks its state.
func wakeAll(word *atomic.Uint32) {
	word.Store(0)
	futexWake(word)
}
