package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/cap"
	"github.com/gpuos/gpuos/internal/ledger"
	"github.com/gpuos/gpuos/internal/mem"
	"github.com/gpuos/gpuos/internal/sched"
	"github.com/gpuos/gpuos/internal/wire"
)

// Session is one client context on the driver.
type Session struct {
	d      *Driver
	id     uint64
	tenant *tenantState
	params v1.AttachSession

	table  *cap.Table
	self   cap.Handle // the session object, root of everything it holds
	window *mem.Window
	ledger *ledger.Ledger
	queue  *sched.Queue
	stream *streamObj // the default stream (stream handle 0)

	ctx    context.Context // ends when the session ends
	cancel context.CancelFunc
	conn   atomic.Pointer[wire.Conn]
	done   chan struct{} // closed once everything is reclaimed
	hot    hotPath       // shared-memory rings and staging (hotpath.go)

	mu       sync.Mutex
	deferred error                          // first error of asynchronous work, for the next synchronizing call
	allocs   map[*mem.Allocation]cap.Handle // address-based refs find their buffer's handle here
	globals  map[uint64]globalRange         // module globals looked up, by address
	state    string

	issueNs     atomic.Int64 // moving average of the time a launch takes to issue (noteIssue)
	fenceExpect atomic.Int64 // moving average of its paced fence waits, ns (pollLowFence)

	launches, copies, copyBytes, violations atomic.Uint64
	guard                                   sessionGuard // guarded programs and revocation (guard.go)
	auditLimit                              rateLimit

	deferDone func(error) // deferError, as a Done callback made once
	// launchReq is the ID of the latest Launch request that reached its
	// handler, where a watching client's launches are counted (watch.go);
	// set and read on the serving path only.
	launchReq uint64
	// launchDones counts launch commands whose Done has not run: teardown
	// waits for them before it releases the programs they check.
	launchDones sync.WaitGroup

	// Owned by the serving goroutine (handlers run on it one at a time).
	batch           bool                           // the request is part of a burst: submit Batched
	joinable        *launchCmd                     // the last command submitted, if launches may still join it
	joinBlocks      uint64                         // the largest grid (in blocks) of a launch that may join others
	joinFixed       int                            // launches a command may carry, if fixed ($GPUOS_LAUNCH_JOIN); 0: joinLimit decides
	latency         *latencyRec                    // launch latency stages ($GPUOS_LATENCY_LOG); nil: off
	syncStreams     []backend.Stream               // settle's scratch
	fences          []backend.Fence                // awaitStreams' scratch
	fencePoll       atomic.Int64                   // how long synchronizing calls poll fences (fencePoll), set when the rings open
	reapDue         atomic.Bool                    // a synchronizing call saw its fences reached: reap after the answer
	completion      atomic.Pointer[completionPage] // completion on the client's side (completion.go)
	prefenceDue     atomic.Bool                    // work was submitted: fence it after the answer (prefence)
	prefenceStreams []backend.Stream
}

func (d *Driver) newSession(p *v1.AttachSession, t *tenantState) (*Session, error) {
	lim := d.limits
	lg, err := ledger.New(fmt.Sprintf("session %d", p.SessionID), t.ledger, ledger.Limits{
		ledger.Handles: uint64(lim.Handles), ledger.Buffers: uint64(lim.Buffers)})
	if err != nil {
		return nil, err
	}
	w, err := d.mem.OpenWindow(t.mem)
	if err != nil {
		lg.Close()
		return nil, fmt.Errorf("open memory window: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		d: d, id: p.SessionID, tenant: t, params: *p,
		table:  d.caps.NewTable(lim.Handles),
		window: w, ledger: lg, ctx: ctx, cancel: cancel,
		done:    make(chan struct{}),
		allocs:  map[*mem.Allocation]cap.Handle{},
		globals: map[uint64]globalRange{},
		state:   "active",
	}
	s.deferDone = s.deferError
	s.joinBlocks, s.joinFixed = smallGrid(&d.info), fixedJoin()
	if latencyLog() != "" {
		s.latency = &latencyRec{service: d.sched.TenantClass(s.tenant.name) == sched.ClassHigh}
		if s.latency.service {
			stallTraces.start()
		}
	}
	if s.queue, err = d.sched.NewQueue(d.queueParams(s)); err != nil {
		w.Close()
		lg.Close()
		cancel()
		return nil, fmt.Errorf("open session queue: %w", err)
	}
	d.registerWindow(s)
	rights := cap.Rights(p.Rights&v1.AllSessionRights) | cap.AllBufferRights
	if s.self, err = s.table.Insert(cap.KindSession, s, cap.Ref{}, rights, nil); err != nil {
		s.teardown()
		return nil, err
	}
	so, err := d.newTenantStream(t, d.streamPriority(t, 0))
	if err != nil {
		s.teardown()
		return nil, fmt.Errorf("create default stream: %w", d.check(err))
	}
	s.stream = so
	return s, nil
}

// ID returns the session's id (the manager's).
func (s *Session) ID() uint64 { return s.id }

// rights returns what the session may do now: nothing once it is revoked.
func (s *Session) rights() v1.Rights {
	r, err := s.table.Rights(s.self)
	if err != nil {
		return 0
	}
	if _, err := s.table.Lookup(s.self, cap.KindSession, 0); err != nil {
		return 0
	}
	return v1.Rights(r) & v1.AllSessionRights
}

func (s *Session) serve(conn *wire.Conn) {
	if s.d.sched.TenantClass(s.tenant.name) == sched.ClassHigh {
		if restore, err := highClassThread(); err != nil {
			s.d.log.Warn("high-class session: thread not placed", "session", s.id, "err", err)
		} else if restore != nil {
			defer restore()
		}
	}
	s.conn.Store(conn)
	s.hot.conn = wire.NewHotConn(conn)
	err := s.server().Serve(s.ctx, s.hot.conn)
	if err != nil && !errors.Is(err, context.Canceled) {
		s.d.log.Debug("session ended", "session", s.id, "err", err)
	}
	s.teardown()
}

// server is how the session's requests are served.
func (s *Session) server() *wire.Server {
	return &wire.Server{
		Endpoint: v1.EndpointDriver,
		Rights:   s.rights,
		Handle:   s.handleHot,
		Deferred: func(req *wire.Request, err error) {
			if req.Header.Type == v1.TypeLaunch && req.Header.ID != s.launchReq {
				s.uncountedLaunch() // refused before its handler
			}
			s.deferError(err)
		},
		// launch copies what it keeps of a Launch (its parameters);
		// synchronize keeps nothing of its request.
		Reuse:       func(t v1.Type) bool { return t == v1.TypeLaunch || t == v1.TypeSynchronize },
		Hedge:       func() time.Duration { return s.d.hedge(s.tenant) },
		HedgeDelay:  hedgeDelay(),
		HedgeAlways: hedgeAlways(),
		Answered:    s.answered,
	}
}

// kill ends the session from outside (manager, guard violation, driver close).
func (s *Session) kill() {
	s.mu.Lock()
	if s.state == "active" {
		s.state = "killed"
	}
	s.mu.Unlock()
	s.cancel()
	if c := s.conn.Load(); c != nil {
		c.Close()
	}
}

// teardown reclaims everything the session holds. It runs once, when serving ends.
func (s *Session) teardown() {
	s.cancel()
	// Work already queued is dropped; work in flight completes before its
	// stream is destroyed (the stream cleanup synchronizes it).
	s.queue.Close()
	s.queue.Wait(context.Background())
	s.waitLaunchDones()
	if s.latency != nil {
		s.latency.write(latencyLog(), fmt.Sprintf("%d (tenant %s, %s)", s.id, s.tenant.name, s.params.Label))
	}
	s.d.unregisterWindow(s)
	s.table.Close()
	if s.stream != nil {
		s.destroyStream(s.stream)
	}
	s.closeHot()        // after the streams: no device copy uses the staging area now
	s.closeCompletion() // nor does a fence write the completion page
	s.window.Close()
	s.ledger.Close()
	s.mu.Lock()
	if s.state == "active" {
		s.state = "closed"
	}
	s.mu.Unlock()
	s.d.forget(s)
	s.d.shmTenantLeft(s.tenant.name)
	s.d.audit(audit.Event{Kind: audit.KindSessionClose, Tenant: s.tenant.name, Session: s.id, PID: s.params.PID,
		Detail: map[string]any{"launches": s.launches.Load(), "copies": s.copies.Load(), "copy_bytes": s.copyBytes.Load()}})
	close(s.done)
}

// launchDoneWait bounds how long teardown waits for launches' Done
// callbacks: the tracking runs them right after the queue reports the
// commands complete, so only a stuck callback could take long, and that
// must not keep the session's resources forever.
const launchDoneWait = 10 * time.Second

// waitLaunchDones waits for the Done callbacks of the session's launch
// commands, which read its programs' guard state that teardown releases.
func (s *Session) waitLaunchDones() {
	done := make(chan struct{})
	go func() {
		s.launchDones.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(launchDoneWait):
		s.d.log.Warn("launch completions still running at session teardown", "session", s.id)
	}
}

// Done is closed once the session has ended and its resources are reclaimed.
func (s *Session) Done() <-chan struct{} { return s.done }

// deferError keeps the first error of asynchronous work for the next
// synchronizing call, as CUDA reports errors of asynchronous calls.
func (s *Session) deferError(err error) {
	if err == nil {
		return
	}
	s.d.check(err)
	s.mu.Lock()
	if s.deferred == nil {
		s.deferred = err
	}
	s.mu.Unlock()
	s.raiseCalls() // after the error is kept: the client's Synchronize finds it
}

// takeDeferred returns and clears the deferred error.
func (s *Session) takeDeferred() error {
	s.checkGuard(true) // a guard violation found now is deferred like any asynchronous error
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.deferred
	s.deferred = nil
	return err
}

// deny records a refused request in the audit log.
func (s *Session) deny(what string, err error) {
	s.d.audit(audit.Event{Kind: audit.KindDeny, Tenant: s.tenant.name, Session: s.id, PID: s.params.PID,
		Detail: map[string]any{"request": what}}.WithError(err))
}

// Stat returns the session's statistics.
func (s *Session) Stat() v1.SessionStat {
	snap := s.ledger.Snapshot()
	qs := s.queue.Stats()
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	evictions, swapped := s.swapStats()
	return v1.SessionStat{
		ID: s.id, Tenant: s.tenant.name, Device: uint32(s.d.opts.Ordinal), PID: s.params.PID, Label: s.params.Label,
		Rights: s.rights(), MemoryBytes: snap.Used[ledger.DeviceBytes], Buffers: uint32(snap.Used[ledger.Buffers]),
		Programs: uint32(snap.Used[ledger.Programs]), Streams: uint32(snap.Used[ledger.Streams]),
		Launches: s.launches.Load(), Copies: s.copies.Load(), CopyBytes: s.copyBytes.Load(),
		InFlight: uint32(qs.InFlight), QueueDepth: uint32(qs.Queued), QueueDelayNs: uint64(qs.QueueDelay), GPUTimeNs: uint64(qs.GPUTime),
		Violations: uint32(s.violations.Load()), State: state,
		Evictions: evictions, SwappedBytes: swapped,
	}
}

// rateLimit samples hot-path events for the audit log: a token bucket of
// auditBurst tokens refilled at auditPerSecond, so a session's launches and
// copies are logged about every 10 ms whatever their rate (a burst of a few
// in a row), and the rest counted. Spread that way, rather than the first
// hundred of each second, no run of a service's requests pays for them
// together (bench/RESULTS.md, session 18: the first ~95 ms of each second
// were slower through gpuos).
type rateLimit struct {
	mu         sync.Mutex
	tokens     float64
	last       time.Time // when tokens was last refilled; zero: never
	suppressed uint64
}

const (
	auditPerSecond = 100
	auditBurst     = 10
)

// allow reports whether to log an event now, and how many were suppressed
// since the last one logged.
func (r *rateLimit) allow(now time.Time) (bool, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.IsZero() {
		r.tokens = auditBurst
	} else if d := now.Sub(r.last); d > 0 {
		r.tokens = min(auditBurst, r.tokens+d.Seconds()*auditPerSecond)
	}
	r.last = now
	if r.tokens < 1 {
		r.suppressed++
		return false, 0
	}
	r.tokens--
	sup := r.suppressed
	r.suppressed = 0
	return true, sup
}

// auditingHot reports whether a hot-path event (a launch, a copy) is to be
// logged now, and how many were suppressed before it: callers build the
// event's details only then.
func (s *Session) auditingHot() (bool, uint64) {
	if s.d.opts.Audit == nil {
		return false, 0
	}
	return s.auditLimit.allow(time.Now())
}

// auditHot logs a hot-path event that auditingHot let through.
func (s *Session) auditHot(kind audit.Kind, suppressed uint64, detail map[string]any) {
	if suppressed > 0 {
		detail["suppressed_before"] = suppressed
	}
	s.d.auditDeferred(audit.Event{Kind: kind, Tenant: s.tenant.name, Session: s.id, PID: s.params.PID, Detail: detail})
}
