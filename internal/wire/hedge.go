package wire

import (
	"sync"
	"sync/atomic"
	"time"
)

// Hedged serving (Server.Hedge). On a virtual machine the hypervisor takes a
// virtual CPU away now and then, for up to milliseconds, without the guest
// knowing (measured on the lent H100 machines: every CPU, 0.04-5% of the
// time). A request that arrives while the one goroutine watching its ring is
// away waits for it to come back; natively the same program has no such
// second thread on its path. Two watchers, on different CPUs, are both away
// far less often.

// DefaultHedgeDelay is how long a request waits unread before the helper
// stands in for Serve's goroutine (Server.HedgeDelay): far less than the
// hypervisor's pauses (100 µs to ms), far more than the goroutine takes to
// read a request it is watching for (about a µs). Only then does the
// serving state move between CPUs, which costs a request a few µs (run 32:
// P50 +4-6 µs when the first to see a request served it).
const DefaultHedgeDelay = 20 * time.Microsecond

// On demand (Server.HedgeAlways unset), the helper watches only for a while
// after Serve's goroutine was seen away: measured on the H100's quiet
// hosts, a helper spinning beside it all the time raised the service's P99
// alone by 16 µs on average (its slowest launches' cuLaunchKernel took
// twice as long) while serving almost none of its requests (bench/RESULTS.md,
// session 25). Serve's goroutine times its own looks while it watches: a gap
// of over hedgeStall between two means the system ran something else on its
// CPU (the hypervisor, another thread), and the helper then watches beside
// it for hedgeActive after the latest such gap. Hosts that take CPUs away
// often keep it watching; quiet ones rarely wake it.
const (
	hedgeStall  = 100 * time.Microsecond
	hedgeActive = time.Second
)

// hedgeable is a transport whose requests one goroutine can watch for while
// another serves (HotConn).
type hedgeable interface {
	OnRings() bool
	Watch(spin, stale time.Duration, quit func() bool) bool
	TryReadFrame() (Frame, bool, error)
}

// hedge is Serve's goroutine and one helper passing the serving state
// between them: the goroutine holding turn serves, requests in order. Serve's
// goroutine serves what comes; the helper only what has waited unread for
// delay while no one held the turn.
type hedge struct {
	st         *serving
	hc         hedgeable
	spin       time.Duration
	delay      time.Duration
	always     bool          // the helper watches whenever requests come, not on demand
	look       func() bool   // Serve's goroutine's quit while it watches: ended, or primaryLook on demand
	helperQuit func() bool   // the helper's quit: h.ended bound once (a method value made per Watch allocates)
	turn       sync.Mutex    // held by the goroutine serving
	wake       chan struct{} // the parked helper watches again
	// waiting is set while Serve's goroutine waits for a request in the
	// transport's own way (after a spin with nothing), holding the turn:
	// the helper parks only then. While requests keep coming it keeps
	// watching, spin after spin.
	waiting atomic.Bool
	// activeUntil is when the helper stops watching on demand (monotonic,
	// since hedgeEpoch): hedgeActive after Serve's goroutine was last seen
	// away. lastLook is that goroutine's latest look (its own).
	activeUntil atomic.Int64
	lastLook    time.Duration
	quit        chan struct{}
	done        atomic.Bool // the connection ended (err), or Serve is returning
	err         error       // written before done is set, read after
	wg          sync.WaitGroup
}

var hedgeEpoch = time.Now()

func startHedge(st *serving, hc hedgeable, spin, delay time.Duration, always bool) *hedge {
	if delay <= 0 {
		delay = DefaultHedgeDelay
	}
	h := &hedge{st: st, hc: hc, spin: spin, delay: delay, always: always, wake: make(chan struct{}, 1), quit: make(chan struct{})}
	h.helperQuit = h.ended
	h.look = h.primaryLook
	if always { // nothing to wake the helper for
		h.look = h.helperQuit
	}
	h.wg.Add(1)
	go h.help()
	return h
}

func (h *hedge) ended() bool { return h.done.Load() }

// primaryLook is Serve's goroutine's quit while it watches on demand,
// called between its looks: it notes a gap since the last one, and wakes
// the helper.
func (h *hedge) primaryLook() bool {
	if f := hedgeLookHook.Load(); f != nil {
		(*f)()
	}
	now := time.Since(hedgeEpoch)
	if h.lastLook != 0 && now-h.lastLook > hedgeStall {
		if f := hedgeStallHook.Load(); f != nil {
			(*f)()
		}
		h.activeUntil.Store(int64(now + hedgeActive))
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
	h.lastLook = now
	return h.done.Load()
}

// watching reports whether the helper should go on watching after a spin
// with nothing stale.
func (h *hedge) watching() bool {
	if h.waiting.Load() {
		return false
	}
	return h.always || int64(time.Since(hedgeEpoch)) < h.activeUntil.Load()
}

// serveTurn is one turn of Serve's goroutine: it watches, and serves what
// came if the helper has not; after spin with nothing, it waits for the next
// request in the transport's own way (polling, then sleeping) holding the
// turn, while the helper parks until that request is served. So while
// requests come within spin of each other both watch (the helper always,
// or on demand), and neither spins once they stop.
func (h *hedge) serveTurn() (done bool, err error) {
	if f := hedgeWatchHook.Load(); f != nil {
		(*f)(true)
	}
	h.lastLook = 0 // serving is not being away
	if h.hc.Watch(h.spin, 0, h.look) {
		h.turn.Lock()
		h.drain()
		h.turn.Unlock()
	} else {
		h.turn.Lock()
		h.waiting.Store(true)
		if !h.done.Load() {
			h.serve(nil)
		}
		h.waiting.Store(false)
		h.turn.Unlock()
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
	if h.done.Load() {
		return true, h.err
	}
	return false, nil
}

// help is the helper goroutine.
func (h *hedge) help() {
	defer h.wg.Done()
	for !h.done.Load() {
		if f := hedgeWatchHook.Load(); f != nil {
			(*f)(false)
		}
		if h.hc.Watch(h.spin, h.delay, h.helperQuit) {
			// Serve's goroutine is away: neither serving (holding the
			// turn) nor reading.
			if h.turn.TryLock() {
				h.st.byHelper = true
				h.drain()
				h.st.byHelper = false
				h.turn.Unlock()
			}
			continue
		}
		if h.watching() {
			// A spin without a request left unread: Serve's goroutine is
			// keeping up, and is watching, not waiting.
			continue
		}
		select {
		case <-h.wake:
		case <-h.quit:
			return
		}
	}
}

// drain serves the requests that are there, without waiting for more.
func (h *hedge) drain() {
	for !h.done.Load() && h.serve(h.hc) {
	}
}

// serve serves one request (waiting for it unless try is set) and reports
// whether it did and the connection goes on.
func (h *hedge) serve(try hedgeable) bool {
	ok, done, err := h.st.step(try)
	if done {
		h.err = err
		h.done.Store(true)
	}
	return ok && !done
}

// stop ends the helper and waits for it.
func (h *hedge) stop() {
	h.done.Store(true)
	close(h.quit)
	h.wg.Wait()
}

// Set by tests: hedgeWatchHook runs before each watch (primary: Serve's
// goroutine), hedgeLookHook between two looks of Serve's goroutine, and
// hedgeStallHook when it finds it was away.
var (
	hedgeWatchHook atomic.Pointer[func(primary bool)]
	hedgeLookHook  atomic.Pointer[func()]
	hedgeStallHook atomic.Pointer[func()]
)
