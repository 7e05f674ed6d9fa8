package policy

import (
	"sync"
	"time"
)

// The watchdog stops hook calls that overrun their deadline. One goroutine
// serves every Instance of the process; it runs only while instances exist,
// and wakes every quarter of the shortest deadline (within [250 µs, 50 ms]).
// A call it sees in progress with the same sequence number for at least the
// call's deadline is interrupted: a call is stopped between its deadline and
// its deadline plus one period, plus the time to its next check site.
//
// Hook calls themselves pay nothing for this but two atomic increments: no
// timer, no goroutine and no clock read per call.

type watchState struct {
	seq   uint64    // last sequence number seen
	since time.Time // when it was first seen in progress
}

var dog struct {
	mu      sync.Mutex
	insts   map[*Instance]*watchState
	running bool
	kick    chan struct{}
}

func watch(i *Instance) {
	dog.mu.Lock()
	defer dog.mu.Unlock()
	if dog.insts == nil {
		dog.insts = map[*Instance]*watchState{}
		dog.kick = make(chan struct{}, 1)
	}
	dog.insts[i] = &watchState{}
	if !dog.running {
		dog.running = true
		go watchLoop()
	}
	select {
	case dog.kick <- struct{}{}: // a shorter deadline may need a shorter period
	default:
	}
}

func unwatch(i *Instance) {
	dog.mu.Lock()
	delete(dog.insts, i)
	dog.mu.Unlock()
}

func watchLoop() {
	for {
		dog.mu.Lock()
		if len(dog.insts) == 0 {
			dog.running = false
			dog.mu.Unlock()
			return
		}
		period := 50 * time.Millisecond
		now := time.Now()
		type lateCall struct {
			i   *Instance
			seq uint64
		}
		var late []lateCall
		for i, st := range dog.insts {
			d := time.Duration(i.deadline.Load())
			if d > 0 {
				period = min(period, d/4)
			}
			s := i.seq.Load()
			switch {
			case s&1 == 0:
				st.seq = s
			case s != st.seq:
				st.seq, st.since = s, now
			case d > 0 && now.Sub(st.since) >= d:
				late = append(late, lateCall{i, s})
			}
		}
		dog.mu.Unlock()
		for _, l := range late {
			l.i.interrupt(l.seq)
		}
		t := time.NewTimer(max(period, 250*time.Microsecond))
		select {
		case <-t.C:
		case <-dog.kick:
			t.Stop()
		}
	}
}
