package sched

import (
	"fmt"
	"time"
)

// guard calls a hook of the policy of entry pe, turning a panic, an error or
// (for a policy that is not built in) an overrun of the hook deadline into an
// error that matches ErrPolicy.
func (s *Scheduler) guard(pe *policyEntry, f func(Policy) error) (err error) {
	p, trusted := pe.p, pe.trusted
	var start int64
	if !trusted {
		start = int64(time.Since(s.epoch))
		s.hookStart.Store(max(start, 1))
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s panicked: %v", ErrPolicy, pe.name(), r)
		}
		if !trusted {
			s.hookStart.Store(0)
			if d := time.Duration(int64(time.Since(s.epoch)) - start); err == nil && d > s.opts.HookDeadline {
				err = fmt.Errorf("%w: %s: a hook ran %v, over its deadline of %v", ErrPolicy, pe.name(), d.Round(time.Microsecond), s.opts.HookDeadline)
			}
		}
	}()
	if e := f(p); e != nil {
		return fmt.Errorf("%w: %s: %w", ErrPolicy, pe.name(), e)
	}
	return nil
}

// name is the policy's name, or a placeholder if asking panics.
func (pe *policyEntry) name() (n string) {
	defer func() {
		if recover() != nil {
			n = "(policy)"
		}
	}()
	return pe.p.Name()
}

// hookLocked calls a notification hook of the active policy; if the policy
// misbehaves it is ejected and the hook goes to its replacement.
func (s *Scheduler) hookLocked(f func(Policy) error) {
	for {
		pe := s.active
		err := s.guard(pe, f)
		if err == nil || !s.ejectLocked(pe, err) {
			return
		}
	}
}

// ejectLocked replaces a misbehaving active policy by the fallback (or, if
// the fallback itself misbehaved, by a plain FIFO that cannot fail). It
// reports false when there is nothing left to fall back to. No queue is
// touched: every command stays where it was, in order.
func (s *Scheduler) ejectLocked(pe *policyEntry, err error) bool {
	if s.active != pe {
		return true // already replaced: retry with the new one
	}
	if pe == s.rescue {
		return false
	}
	pe.ejected = err.Error()
	next := s.fallback
	if pe == s.fallback {
		next = s.rescue
	}
	s.active = next
	if ierr := s.guard(next, func(p Policy) error { return p.Init(&s.host) }); ierr != nil {
		next.ejected = ierr.Error()
		s.active = s.rescue
		s.guard(s.rescue, func(p Policy) error { return p.Init(&s.host) })
	}
	for e := range s.eng {
		s.eng[e].held = false
		s.eng[e].readySince = 0
	}
	s.watchLocked()
	if s.opts.OnEject != nil {
		go s.opts.OnEject(pe.name(), err)
	}
	return true
}

// watchLocked runs the watchdog while the active policy can be interrupted.
func (s *Scheduler) watchLocked() {
	pe := s.active
	_, canStop := pe.p.(Interrupter)
	if pe.trusted || !canStop {
		s.watch.Store(nil)
		return
	}
	s.watch.Store(pe)
	if s.watchStop == nil {
		s.watchStop = make(chan struct{})
		go s.watchdog(s.watchStop)
	}
}

func (s *Scheduler) stopWatch() {
	s.mu.Lock()
	stop := s.watchStop
	s.watchStop = nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
	}
}

// watchdog interrupts a hook that has run past the deadline. It takes no
// lock: the hook it interrupts holds the scheduler's.
func (s *Scheduler) watchdog(stop chan struct{}) {
	tk := time.NewTicker(max(s.opts.HookDeadline/4, 100*time.Microsecond))
	defer tk.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
		}
		pe := s.watch.Load()
		start := s.hookStart.Load()
		if pe == nil || start == 0 {
			continue
		}
		if time.Duration(int64(time.Since(s.epoch))-start) > s.opts.HookDeadline {
			if i, ok := pe.p.(Interrupter); ok {
				i.Interrupt()
			}
		}
	}
}

// Use makes the named policy active. Queued commands stay queued, in order;
// the new policy decides from the next dispatch on.
func (s *Scheduler) Use(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	pe := s.entry(name)
	if pe == nil {
		return fmt.Errorf("use %q: %w", name, ErrNoPolicy)
	}
	if pe == s.active {
		return nil
	}
	if err := s.guard(pe, func(p Policy) error { return p.Init(&s.host) }); err != nil {
		return fmt.Errorf("use %s: %w", name, err)
	}
	pe.ejected = ""
	s.active = pe
	for e := range s.eng {
		s.eng[e].held = false
		s.eng[e].readySince = 0
	}
	s.watchLocked()
	s.runLocked(0)
	return nil
}

// Add registers a policy (not active until Use). Its name must be new.
func (s *Scheduler) Add(p Policy, description string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := (&policyEntry{p: p}).name()
	if s.entry(name) != nil {
		return fmt.Errorf("add policy: %w: %q is taken", ErrInvalidShare, name)
	}
	s.policies = append(s.policies, newEntry(p, description))
	return nil
}

// Remove unregisters a policy that is not built in; if it is active, the
// fallback takes over first.
func (s *Scheduler) Remove(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, pe := range s.policies {
		if pe.name() != name {
			continue
		}
		if pe.builtin {
			return fmt.Errorf("remove %s: built-in policies stay", name)
		}
		if s.active == pe {
			s.active = s.fallback
			s.guard(s.fallback, func(p Policy) error { return p.Init(&s.host) })
			s.watchLocked()
		}
		s.policies = append(s.policies[:i], s.policies[i+1:]...)
		s.runLocked(0)
		return nil
	}
	return fmt.Errorf("remove %q: %w", name, ErrNoPolicy)
}

// Active returns the active policy's name.
func (s *Scheduler) Active() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active.name()
}

// Policies lists the registered policies.
func (s *Scheduler) Policies() []PolicyInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PolicyInfo, 0, len(s.policies))
	for _, pe := range s.policies {
		out = append(out, PolicyInfo{Name: pe.name(), Description: pe.desc, Builtin: pe.builtin,
			Active: pe == s.active, Ejected: pe.ejected})
	}
	return out
}

func durationOf(ns int64) time.Duration { return time.Duration(ns) }
