package sched

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

// Errors returned by this package.
var (
	ErrClosed = v1.Errorf(v1.CodeRevoked, "queue closed")
)

// Kind classifies a command for policies: the GPU's compute and copy engines are
// separate resources.
type Kind uint8

// Command kinds.
const (
	Compute Kind = iota // kernels, memsets, device-to-device copies
	Copy                // host-device copies
	Marker              // fences and synchronisation points: no device time
)

// Command is one unit of work for a backend stream.
type Command struct {
	Kind   Kind
	Stream backend.Stream
	Bytes  uint64 // bytes moved, for copies
	// Issue enqueues the work on Stream. It runs on the dispatcher goroutine and
	// must not block.
	Issue func() error
	// Done, if set, runs once the work has completed on the device, or failed to
	// issue, with the error. It runs on a scheduler goroutine and must not block.
	Done func(error)

	queued time.Time
}

// QueueParams configure a tenant's queue.
type QueueParams struct {
	Weight     int // compute share weight (>= 1)
	CopyWeight int // copy share weight (>= 1)
	Priority   int // class: higher runs first under the priority policy
	InFlight   int // commands issued and not yet complete (>= 1)
	Depth      int // commands waiting to be issued (>= 1)
}

// Stats are a queue's counters.
type Stats struct {
	Submitted, Completed uint64
	Queued, InFlight     int
	QueueDelay           time.Duration // total time commands waited before issue
	Errors               uint64
}

// Options configure a Scheduler.
type Options struct {
	// Device creates the events that track completion.
	Device backend.Device
}

// Scheduler dispatches the commands of all queues of one device.
type Scheduler struct {
	dev backend.Device

	mu      sync.Mutex
	wake    *sync.Cond // dispatcher: work or room may be available
	room    *sync.Cond // submitters: a queue may have room
	queues  []*Queue
	next    int // round-robin cursor
	closed  bool
	done    chan struct{}
	events  []backend.Event // pool
	waiters map[backend.Stream]chan completion
}

type completion struct {
	ev  backend.Event
	cmd *Command
	q   *Queue
}

// New starts a scheduler.
func New(opts Options) *Scheduler {
	s := &Scheduler{dev: opts.Device, done: make(chan struct{}), waiters: map[backend.Stream]chan completion{}}
	s.wake = sync.NewCond(&s.mu)
	s.room = sync.NewCond(&s.mu)
	go s.dispatch()
	return s
}

// Queue is one tenant's (or session's) command queue.
type Queue struct {
	s      *Scheduler
	name   string
	params QueueParams
	cmds   []*Command
	head   int
	closed bool
	stats  Stats
	idle   *sync.Cond // signalled when queued and in-flight both reach zero
}

// NewQueue adds a queue.
func (s *Scheduler) NewQueue(name string, p QueueParams) *Queue {
	if p.Weight < 1 {
		p.Weight = 1
	}
	if p.CopyWeight < 1 {
		p.CopyWeight = p.Weight
	}
	if p.InFlight < 1 {
		p.InFlight = 1
	}
	if p.Depth < 1 {
		p.Depth = 1
	}
	q := &Queue{s: s, name: name, params: p}
	q.idle = sync.NewCond(&s.mu)
	s.mu.Lock()
	s.queues = append(s.queues, q)
	s.mu.Unlock()
	return q
}

func (q *Queue) queued() int { return len(q.cmds) - q.head }

// Submit appends c, blocking while the queue is full. It fails if the queue or
// scheduler closes or ctx ends first.
func (q *Queue) Submit(ctx context.Context, c *Command) error {
	s := q.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.queued() >= q.params.Depth && ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			s.mu.Lock()
			s.room.Broadcast()
			s.mu.Unlock()
		})
		defer stop()
	}
	for q.queued() >= q.params.Depth && !q.closed && !s.closed && ctx.Err() == nil {
		s.room.Wait()
	}
	switch {
	case q.closed || s.closed:
		return ErrClosed
	case ctx.Err() != nil:
		return fmt.Errorf("submit: %w", ctx.Err())
	}
	c.queued = time.Now()
	if q.head > 0 && q.head == len(q.cmds) {
		q.cmds, q.head = q.cmds[:0], 0
	}
	q.cmds = append(q.cmds, c)
	q.stats.Submitted++
	s.wake.Signal()
	return nil
}

// Stats returns the queue's counters.
func (q *Queue) Stats() Stats {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	st := q.stats
	st.Queued = q.queued()
	return st
}

// Wait blocks until every command submitted so far has completed (or ctx ends).
func (q *Queue) Wait(ctx context.Context) error {
	s := q.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			s.mu.Lock()
			q.idle.Broadcast()
			s.mu.Unlock()
		})
		defer stop()
	}
	for (q.queued() > 0 || q.stats.InFlight > 0) && ctx.Err() == nil {
		q.idle.Wait()
	}
	return ctx.Err()
}

// Close removes the queue: commands not yet issued complete with ErrClosed;
// commands in flight complete normally.
func (q *Queue) Close() {
	s := q.s
	s.mu.Lock()
	pending := q.cmds[q.head:]
	q.cmds, q.head, q.closed = nil, 0, true
	for i, x := range s.queues {
		if x == q {
			s.queues = append(s.queues[:i], s.queues[i+1:]...)
			break
		}
	}
	s.room.Broadcast()
	q.idle.Broadcast()
	s.mu.Unlock()
	for _, c := range pending {
		if c.Done != nil {
			c.Done(ErrClosed)
		}
	}
}

// Close stops the dispatcher; queued commands complete with ErrClosed.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	queues := s.queues
	s.wake.Broadcast()
	s.room.Broadcast()
	s.mu.Unlock()
	<-s.done
	for _, q := range queues {
		q.Close()
	}
}

// pick chooses the next queue with work and room, round-robin. Called with mu held.
func (s *Scheduler) pick() *Queue {
	n := len(s.queues)
	for i := 0; i < n; i++ {
		q := s.queues[(s.next+i)%n]
		if q.queued() > 0 && q.stats.InFlight < q.params.InFlight {
			s.next = (s.next + i + 1) % n
			return q
		}
	}
	return nil
}

func (s *Scheduler) dispatch() {
	defer close(s.done)
	s.mu.Lock()
	for {
		var q *Queue
		for !s.closed {
			if q = s.pick(); q != nil {
				break
			}
			s.wake.Wait()
		}
		if s.closed {
			s.mu.Unlock()
			return
		}
		c := q.cmds[q.head]
		q.cmds[q.head] = nil
		q.head++
		q.stats.InFlight++
		q.stats.QueueDelay += time.Since(c.queued)
		s.room.Broadcast()
		s.mu.Unlock()

		err := c.Issue()
		var ev backend.Event
		if err == nil && c.Stream != nil {
			ev, err = s.track(c)
		}
		s.mu.Lock()
		if err != nil || c.Stream == nil {
			s.finishLocked(q, c, err)
			continue
		}
		w := s.waiters[c.Stream]
		if w == nil {
			w = make(chan completion, 1024)
			s.waiters[c.Stream] = w
			go s.wait(w)
		}
		s.mu.Unlock()
		w <- completion{ev: ev, cmd: c, q: q}
		s.mu.Lock()
	}
}

// track records a pooled event after c on its stream.
func (s *Scheduler) track(c *Command) (backend.Event, error) {
	s.mu.Lock()
	var ev backend.Event
	if n := len(s.events); n > 0 {
		ev, s.events = s.events[n-1], s.events[:n-1]
	}
	s.mu.Unlock()
	if ev == nil {
		var err error
		if ev, err = s.dev.NewEvent(backend.EventDisableTiming); err != nil {
			return nil, fmt.Errorf("track completion: %w", err)
		}
	}
	if err := c.Stream.Record(ev); err != nil {
		ev.Destroy()
		return nil, fmt.Errorf("track completion: %w", err)
	}
	return ev, nil
}

// wait completes the commands of one stream in order.
func (s *Scheduler) wait(w chan completion) {
	for x := range w {
		err := x.ev.Synchronize()
		s.mu.Lock()
		s.events = append(s.events, x.ev)
		s.finishLocked(x.q, x.cmd, err)
		s.mu.Unlock()
	}
}

// finishLocked accounts a finished command and runs Done without the lock.
func (s *Scheduler) finishLocked(q *Queue, c *Command, err error) {
	q.stats.InFlight--
	q.stats.Completed++
	if err != nil {
		q.stats.Errors++
	}
	if q.queued() == 0 && q.stats.InFlight == 0 {
		q.idle.Broadcast()
	}
	s.wake.Signal()
	if c.Done != nil {
		s.mu.Unlock()
		c.Done(err)
		s.mu.Lock()
	}
}

// Forget stops tracking a stream that is being destroyed; call it after the
// stream's work has completed.
func (s *Scheduler) Forget(st backend.Stream) {
	s.mu.Lock()
	w := s.waiters[st]
	delete(s.waiters, st)
	s.mu.Unlock()
	if w != nil {
		close(w)
	}
}
