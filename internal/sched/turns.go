package sched

import (
	"math"
	"slices"

	"github.com/gpuos/gpuos/internal/backend"
)

// Turns and accounting chains.
//
// A GPU runs kernels of different streams at once when SMs are free, and not
// in the order they were issued. Timing work with events then cannot say
// whose work the device was busy with: an event after a short kernel that
// waited for SMs behind another tenant's long kernel spans that kernel too.
// A policy that shares GPU time therefore issues in turns (Choice.Group):
// within a group, a tenant's command starts on the device only once the
// group's previous holder's work has completed. The wait is on the device,
// not the host: the new holder's stream waits for an event recorded on each
// of the previous holder's streams (gate), so a switch costs a dependency
// resolution on the GPU, not a round trip through the daemon.
//
// Each group of an engine has its own accounting chain: its timed points in
// issue order. A point's charge is the GPU time from the later of the chain's
// latest end so far and its own start event to its end. A start event is
// recorded when the chain was idle and at each turn switch (after the gate),
// so within a group the charges add up to the time the group held the
// device, each tenant charged for its turns. Group 0 is the work of no
// group: one chain for all of it, exact when its work does not overlap.

// chain is one group's accounting order and turn on an engine.
type chain struct {
	head, tail *point          // timed points not yet accounted, in issue order
	latest     backend.Event   // the latest end accounted so far
	holder     *tenant         // whose turn it is (groups other than 0)
	streams    []*streamQ      // the holder's streams that issued in its turn
	gate       []backend.Event // recorded on the previous holder's streams at the switch
}

// chainOf returns group g's chain on engine e, creating it.
func (s *Scheduler) chainOf(e Engine, g uint8) *chain {
	eng := &s.eng[e]
	for int(g) >= len(eng.chains) {
		eng.chains = append(eng.chains, nil)
	}
	ch := eng.chains[g]
	if ch == nil {
		ch = &chain{}
		eng.chains[g] = ch
	}
	return ch
}

// appendPoint adds a timed point to the end of its chain.
func (ch *chain) appendPoint(p *point) {
	p.ch = ch
	if ch.tail == nil {
		ch.head = p
	} else {
		ch.tail.next = p
	}
	ch.tail = p
}

// turnGate is what a command's issue must do on the device before the
// command, decided under the lock and done without it: record events on the
// previous holder's streams, and make the command's stream wait for them.
type turnGate struct {
	ch     *chain
	record []backend.Stream // a new turn: gate events to record on these
	events []backend.Event  // the gate (pooled or nil: created unlocked)
	wait   bool             // the command's stream waits for events
	start  bool             // a new turn: the command's point needs a start event
}

// turnLocked decides how a command of tenant t on stream sq, issued in group
// g of engine e, takes its turn.
func (s *Scheduler) turnLocked(e Engine, g uint8, t *tenant, sq *streamQ) turnGate {
	ch := s.chainOf(e, g)
	tg := turnGate{ch: ch}
	if ch.holder == t {
		if !slices.Contains(ch.streams, sq) {
			// Another stream of the holder joins its turn: it waits for
			// the same gate.
			ch.streams = append(ch.streams, sq)
			tg.events = append(tg.events, ch.gate...)
			tg.wait = len(tg.events) > 0
		}
		return tg
	}
	// A new turn. Gate events of the previous turn are reused: every
	// stream that waited for them captured their record when it did.
	tg.start = true
	for _, old := range ch.streams {
		if old.st == nil {
			continue
		}
		tg.record = append(tg.record, old.st)
	}
	for i := range tg.record {
		var ev backend.Event
		if i < len(ch.gate) {
			ev = ch.gate[i]
		} else {
			ev = s.takeEvent(false)
		}
		tg.events = append(tg.events, ev)
	}
	for _, ev := range ch.gate[min(len(tg.record), len(ch.gate)):] {
		s.putEvent(ev, false)
	}
	ch.gate = ch.gate[:0]
	tg.wait = len(tg.record) > 0
	ch.holder = t
	ch.streams = append(ch.streams[:0], sq)
	s.gating++
	return tg
}

// apply records the gate and makes st wait for it; unlocked. A gate that
// cannot be recorded is skipped: it only orders tenants' work for
// accounting, and the command itself is still correct.
func (tg *turnGate) apply(s *Scheduler, st backend.Stream) {
	for i, old := range tg.record {
		ev := tg.events[i]
		if ev == nil {
			var err error
			if ev, err = s.newEvent(false); err != nil {
				continue
			}
			tg.events[i] = ev
		}
		if recordMarker(old, ev) != nil {
			tg.events[i] = nil
			ev.Destroy()
		}
	}
	if tg.wait {
		for _, ev := range tg.events {
			if ev != nil {
				st.WaitEvent(ev)
			}
		}
	}
}

// doneLocked keeps a new turn's gate for streams that join the turn later.
func (tg *turnGate) doneLocked(s *Scheduler) {
	if !tg.start {
		return // joining a turn: the gate is the turn's already
	}
	for _, ev := range tg.events {
		if ev != nil {
			tg.ch.gate = append(tg.ch.gate, ev)
		}
	}
	s.gating--
	if s.gating == 0 {
		s.gateIdle.Broadcast()
	}
}

// forgetTurnsLocked drops a stream from every turn: it is about to be destroyed.
// It waits until no gate is being recorded (one might be on that stream).
func (s *Scheduler) forgetTurnsLocked(st backend.Stream) {
	for s.gating > 0 {
		s.gateIdle.Wait()
	}
	for e := range s.eng {
		for _, ch := range s.eng[e].chains {
			if ch == nil {
				continue
			}
			ch.streams = slices.DeleteFunc(ch.streams, func(sq *streamQ) bool { return sq.st == st })
		}
	}
}

// turnFlushLocked returns the flush to do before tenant t's command on sq
// is issued in group g of engine e, if one is owed: a batch of untracked
// commands must not span a turn switch (its end would time the new holder's
// work too), nor mix groups.
func (s *Scheduler) turnFlushLocked(e Engine, g uint8, t *tenant, sq *streamQ) (action, bool) {
	if e != EngineCompute {
		g = 0
	}
	if g != 0 && s.chainOf(e, g).holder != t {
		for _, x := range s.tails {
			if x.tail.e == e {
				s.removeTail(x)
				return action{kind: actFlush, sq: x}, true
			}
		}
	}
	if sq.tail != nil && sq.tail.group != g {
		s.removeTail(sq)
		return action{kind: actFlush, sq: sq}, true
	}
	return action{}, false
}

// sliceUnits is how many units of the sliceable command c its next slice
// takes under choice ch.
func (s *Scheduler) sliceUnits(c *Command, ch Choice) uint32 {
	remaining := c.Units - c.next
	if w := c.Wave; w > 0 && ch.Reserve {
		// One wave less the reserve, whatever the quantum: more would
		// fill the device, and fewer units than a wave take as long.
		return max(min(remaining, reserveSlice(w, s.opts.Reserve)), 1)
	}
	n := remaining
	if ch.Quantum > 0 {
		if per := c.perUnit(); per > 0 {
			n = uint32(min(int64(remaining), max(1, int64(ch.Quantum)/per)))
		} else if c.Wave == 0 {
			n = max(1, c.Units/16) // no history yet: probe with a small slice
		}
	}
	if w := c.Wave; w > 0 {
		n = max(n, min(w, remaining)) // less than a wave takes as long as a wave
	}
	return max(n, 1)
}

// reserveSlice is a wave of w units less the reserve (a fraction of it, at
// least one unit; none if the fraction is not positive), at least one unit.
func reserveSlice(w uint32, reserve float64) uint32 {
	if reserve <= 0 || w < 2 {
		return max(w, 1)
	}
	r := uint32(min(float64(w-1), max(1, math.Ceil(float64(w)*reserve))))
	return w - r
}
