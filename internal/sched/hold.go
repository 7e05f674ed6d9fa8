package sched

import (
	"context"
	"fmt"
	"sync"
)

// Hold stops the queue's commands from being issued and waits until none of
// them is in flight, so the memory manager can remap the session's memory (or
// evict it) while no kernel of the session can run. Commands submitted
// meanwhile wait in the queue; a sliced kernel already partly issued is
// finished first. Holds nest: the queue runs again once every release has
// been called. release is idempotent.
//
// Hold does not dispatch on the caller's goroutine (it may hold locks that
// issuing other sessions' work must not wait for); it asks the background
// goroutine to track what is in flight at once. If ctx ends first, Hold
// undoes itself and returns the context's error.
func (q *Queue) Hold(ctx context.Context) (release func(), err error) {
	s := q.s
	s.mu.Lock()
	defer s.mu.Unlock()
	q.holds++
	if q.inflight > 0 {
		if ctx.Done() != nil {
			stop := context.AfterFunc(ctx, func() {
				s.mu.Lock()
				q.idle.Broadcast()
				s.mu.Unlock()
			})
			defer stop()
		}
		q.waiting++ // batched completions are tracked at once
		s.handOffLocked(q)
		s.kick()
		for q.inflight > 0 && ctx.Err() == nil {
			q.idle.Wait()
		}
		q.waiting--
	}
	if err := ctx.Err(); err != nil {
		q.unholdLocked()
		return nil, fmt.Errorf("hold queue: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			q.unholdLocked()
			s.mu.Unlock()
		})
	}, nil
}

func (q *Queue) unholdLocked() {
	q.holds--
	if q.holds == 0 && q.queued > 0 {
		q.s.kick()
	}
}

// Held reports whether the queue is held, and how many commands wait in it.
func (q *Queue) Held() (held bool, queued int) {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	return q.holds > 0, q.queued
}
