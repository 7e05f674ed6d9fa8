package audit

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Logger. The zero value is usable.
type Options struct {
	// Queue is how many events may wait for the writer before Log drops
	// them (default 4096).
	Queue int
	// MaxLine caps a line's length in bytes: a longer event loses its Detail
	// and is marked Truncated (default 16 KiB).
	MaxLine int
	// Now stamps events logged with a zero Time (default time.Now).
	Now func() time.Time
	// DeferFor is how long an event given to Defer may wait before the
	// writer is woken for it (default 100ms).
	DeferFor time.Duration
}

const (
	defaultQueue    = 4096
	defaultMaxLine  = 16 << 10
	defaultDeferFor = 100 * time.Millisecond
)

// item is one queued event, a flush request when ack is not nil, or, when
// drain is set, only a nudge to write the deferred events.
type item struct {
	ev    Event
	ack   chan error
	drain bool
}

// A Logger appends events to an audit log without blocking its callers. Its
// methods are safe for concurrent use.
type Logger struct {
	w       io.Writer
	closer  io.Closer // the file Open opened, closed by Close
	maxLine int
	now     func() time.Time

	mu     sync.RWMutex
	closed bool // guarded by mu
	queue  chan item

	dropped atomic.Uint64 // events Log or Defer could not queue, ever
	written atomic.Uint64 // lines written, summaries included
	done    chan struct{} // closed when the writer goroutine exits

	// Deferred events (Defer), written by the writer before the next item
	// it takes; the timer sends that item (drain) DeferFor after the first.
	deferMu  sync.Mutex
	deferred []Event // guarded by deferMu
	armed    bool    // guarded by deferMu: the timer runs
	deferFor time.Duration
	timer    *time.Timer

	// Owned by the writer goroutine.
	reported uint64 // drops already summarised
	err      error  // first write or encode error
}

// New returns a Logger writing to w. Each line reaches w in one Write call.
func New(w io.Writer, opts Options) *Logger {
	if opts.Queue <= 0 {
		opts.Queue = defaultQueue
	}
	if opts.MaxLine <= 0 {
		opts.MaxLine = defaultMaxLine
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.DeferFor <= 0 {
		opts.DeferFor = defaultDeferFor
	}
	l := &Logger{
		w:        w,
		maxLine:  opts.MaxLine,
		now:      opts.Now,
		queue:    make(chan item, opts.Queue),
		done:     make(chan struct{}),
		deferFor: opts.DeferFor,
	}
	l.timer = time.AfterFunc(time.Hour, l.nudge)
	l.timer.Stop()
	go l.run()
	return l
}

// Open returns a Logger appending to the file at path, created with mode
// 0640 if absent. O_APPEND makes each line's write land whole at the end of
// the file even when other processes append to it too.
func Open(path string, opts Options) (*Logger, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	l := New(f, opts)
	l.closer = f
	return l, nil
}

// Log queues e for writing and returns at once. If e.Time is zero it is
// stamped now. If the queue is full, or the logger closed, e is dropped and
// counted. The caller must not modify e.Detail afterwards.
func (l *Logger) Log(e Event) { l.enqueue(e, false) }

// Defer queues e like Log but does not wake the writer for it: e is written
// with the next event Log queues, at a Flush or Close, or at the latest
// Options.DeferFor after the first deferred event still waiting. It is for
// events logged on a latency-critical path (a launch, a copy), where waking
// the writer's goroutine, a thread on another CPU, costs the caller more
// than the event is worth. Deferred events may be written after events Log
// queued later; each carries its own Time.
func (l *Logger) Defer(e Event) { l.enqueue(e, true) }

func (l *Logger) enqueue(e Event, deferred bool) {
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		return
	}
	if !deferred {
		select {
		case l.queue <- item{ev: e}:
		default:
			l.dropped.Add(1)
		}
		return
	}
	l.deferMu.Lock()
	defer l.deferMu.Unlock()
	if len(l.deferred) >= cap(l.queue) {
		l.dropped.Add(1)
		return
	}
	l.deferred = append(l.deferred, e)
	if !l.armed {
		l.armed = true
		l.timer.Reset(l.deferFor)
	}
}

// nudge, the timer's function, asks the writer to write the deferred
// events. If the queue is full the writer has items to take, and writes
// them before the next one anyway.
func (l *Logger) nudge() {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return
	}
	select {
	case l.queue <- item{drain: true}:
	default:
	}
}

// writeDeferred writes the deferred events (the writer goroutine).
func (l *Logger) writeDeferred() {
	l.deferMu.Lock()
	evs := l.deferred
	l.deferred, l.armed = nil, false
	l.deferMu.Unlock()
	for _, e := range evs {
		l.write(e)
	}
}

// Dropped returns how many events Log and Defer have dropped so far.
func (l *Logger) Dropped() uint64 { return l.dropped.Load() }

// Written returns how many lines have been written so far.
func (l *Logger) Written() uint64 { return l.written.Load() }

// Flush waits until every event queued before it has been written (and a
// pending drop summary too) and returns the first write error so far.
func (l *Logger) Flush() error {
	ack := make(chan error, 1)
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return fmt.Errorf("flush: %w", ErrClosed)
	}
	l.queue <- item{ack: ack} // may wait for room: Flush is allowed to block
	l.mu.RUnlock()
	return <-ack
}

// Close writes what is queued, stops the writer, closes the file if Open
// opened it and returns the first error. Later Logs are dropped.
func (l *Logger) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fmt.Errorf("close: %w", ErrClosed)
	}
	l.closed = true
	close(l.queue)
	l.mu.Unlock()
	<-l.done
	err := l.err
	if l.closer != nil {
		if cerr := l.closer.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close audit log: %w", cerr)
		}
	}
	return err
}

func (l *Logger) run() {
	defer close(l.done)
	for it := range l.queue {
		l.writeDeferred()
		l.summariseDrops()
		switch {
		case it.drain:
		case it.ack != nil:
			it.ack <- l.err
		default:
			l.write(it.ev)
		}
	}
	l.timer.Stop()
	l.writeDeferred()
	l.summariseDrops()
}

// summariseDrops writes one record counting the events dropped since the
// last summary, if any.
func (l *Logger) summariseDrops() {
	n := l.dropped.Load()
	if n == l.reported {
		return
	}
	l.write(Event{
		Time:   l.now(),
		Kind:   KindDropped,
		Detail: map[string]any{"dropped": n - l.reported, "total": n},
	})
	l.reported = n
}

func (l *Logger) write(e Event) {
	line, err := encode(e, l.maxLine)
	if err == nil {
		_, err = l.w.Write(line)
	}
	if err != nil {
		if l.err == nil {
			l.err = fmt.Errorf("write audit %s event: %w", e.Kind, err)
		}
		return
	}
	l.written.Add(1)
}

func openRead(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	return f, nil
}
