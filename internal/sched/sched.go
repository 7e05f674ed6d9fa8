package sched

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// Defaults of Options.
const (
	DefaultPolicy         = "fair"
	DefaultTenantInFlight = 64
	DefaultLookahead      = 2 * time.Millisecond
	DefaultCopyLookahead  = 16 << 20
	DefaultSliceTarget    = 100 * time.Microsecond
	DefaultLowClassPoll   = 20 * time.Microsecond
	DefaultReserve        = 1.0 / 32
	DefaultHookDeadline   = 20 * time.Millisecond
	DefaultStallTimeout   = 2 * time.Second
	DefaultMaxHold        = 10 * time.Millisecond
	DefaultTickInterval   = 10 * time.Millisecond
	DefaultTrackEvery     = 16
	DefaultFlushDelay     = 200 * time.Microsecond
)

// minInFlight commands per engine are always allowed, whatever the lookahead
// estimate says, so the device never idles for want of a decision.
const minInFlight = 2

// Per-command tracking threshold: work at least this costly gets its own
// completion event (the event costs nothing next to it).
const (
	trackComputeNs = 20_000
	trackCopyBytes = 1 << 20
)

// Options configure a Scheduler. A zero field takes its default.
type Options struct {
	// Device creates the events that track completion and time work.
	Device backend.Device
	// Policy is the policy active at start (default "fair").
	Policy string
	// Fallback is the built-in policy that replaces a misbehaving one
	// (default "fair").
	Fallback string
	// TenantInFlight bounds each tenant's issued, incomplete commands (or
	// slices) per engine (default 64).
	TenantInFlight int
	// Lookahead bounds the estimated GPU time issued to the compute engine and
	// not yet complete, all tenants together (default 2 ms), so the policy
	// decides late and newly arrived urgent work waits for little.
	Lookahead time.Duration
	// CopyLookahead is the same bound for copies, in bytes (default 16 MiB).
	CopyLookahead uint64
	// SliceTarget is the length of a slice when a policy asks for slicing
	// without naming a quantum (default 100 µs); negative disables slicing.
	SliceTarget time.Duration
	// Reserve is the part of a wave (Command.Wave) that slices issued with
	// Choice.Reserve leave free for higher classes (default 1/32; at least
	// one unit); negative: none.
	Reserve float64
	// HookDeadline bounds one hook call of a policy that is not built in
	// (default 20 ms): an overrun ejects it, and an Interrupter is
	// interrupted once the deadline passes.
	HookDeadline time.Duration
	// StallTimeout ejects a policy that leaves an engine idle while work is
	// ready for this long (default 2 s).
	StallTimeout time.Duration
	// MaxHold bounds Choice.Hold (default 10 ms).
	MaxHold time.Duration
	// TickInterval is the period of OnTick while there is work (default 10 ms).
	TickInterval time.Duration
	// TrackEvery bounds how many small commands of one stream share one
	// completion event (default 16).
	TrackEvery int
	// FlushDelay bounds how long issued commands may go untracked (default
	// 200 µs).
	FlushDelay time.Duration
	// Spin is how long the dispatcher goroutine polls for more work after
	// it issued some, before it sleeps: a burst of Batched submissions then
	// reaches it without a wake-up each; and how long WaitIssued polls for
	// another goroutine to issue the queue's work before it sleeps (default
	// 0: both sleep at once).
	Spin time.Duration
	// Yield is what those polls call between two looks (default
	// runtime.Gosched). The driver passes ring.Yield, a sched_yield that
	// keeps the goroutine on its P: Gosched lets any other runnable
	// goroutine run first, those of the best-effort tenants under load
	// included, while a service's synchronize polls for its launch.
	Yield func()
	// CountIssuing has the scheduler count the goroutines issuing commands
	// (InDriver), for latency diagnostics: off, the issue path takes no
	// shared counter.
	CountIssuing bool
	// NoExpress turns the express lane off (express.go): a high-class
	// command then waits for the dispatch token like any other. For
	// measuring what the lane gives.
	NoExpress bool
	// NoHighFirst makes a high-class submitter that takes the dispatch
	// token dispatch in the usual order, other tenants' markers and batch
	// ends first, up to the submit budget (express.go, runForLocked), and
	// leave its Batched commands to the dispatcher goroutine as other
	// classes do. For measuring what issuing the high class first gives.
	NoHighFirst bool
	// BlockingWait makes the completion waiters sleep until the device
	// interrupts (CUDA's blocking-sync events) rather than poll for their
	// events in the backend (the context's scheduling mode: on CUDA, a
	// polling thread per stream with work in flight). It saves the daemon
	// about half a CPU under load, but cost a service 17-41 µs at P99 on
	// the H100 (bench/RESULTS.md, run 33), so it is off by default.
	BlockingWait bool
	// LowClassPoll is how often the completion waiters of the low
	// (best-effort) class ask the backend whether their event completed,
	// sleeping between (default 20 µs; negative: they wait in the backend,
	// which on CUDA polls inside the driver without pause, as the other
	// classes' do). Polling best-effort work without pause took the daemon
	// half as much CPU again under load and the service a few µs at P50-P99
	// (bench/RESULTS.md, run 37); the normal class is left alone, since its
	// tenants' turns wait for their completions (applied to it, the 1:3
	// shares test's short-kernel tenant lost 1-1.5% of its share, run 38).
	LowClassPoll time.Duration
	// NoLowClassPace makes the low class's completion waiters look every
	// LowClassPoll from the start, instead of first sleeping through most
	// of a compute point's expected time (LowPollFirst). For measuring.
	NoLowClassPace bool
	// NoSpareKicks makes a high-class submitter that issued its own
	// commands wake the background goroutine whenever other work is
	// queued, rather than only when no completion or timer will come to
	// it (dispatcherOwedLocked). For measuring what sparing them gives.
	NoSpareKicks bool
	// LowClassSpin has one goroutine complete the low class's tracked
	// points while a tenant of class high has a session, reading a fence
	// enqueued behind each point's end without pause instead of the
	// waiters' naps (lowspin.go): no timer and no driver call per look, for
	// one CPU kept busy while such points are in flight. Streams without
	// fences (backend.Fencer) are waited for as usual. The driver turns it
	// on on a GPU (driver.Options.NoLowClassSpin).
	LowClassSpin bool
	// EpisodeHold, if positive, holds the low class's work while a
	// service's launches run slow, until this long after the last slow one
	// (episode.go), while the spinner runs (LowClassSpin). The driver sets
	// it where it turns the spinner on (driver.DefaultEpisodeHold).
	EpisodeHold time.Duration
	// NoHighClassStart records no start event before any high-class
	// command, instead of one in highStartEvery (each is charged at most
	// its tenant's estimate, as the others are). For measuring.
	NoHighClassStart bool
	// OnEject, if set, is told (on its own goroutine) when a policy is
	// replaced for misbehaving.
	OnEject func(policy string, err error)
	// Clock, if set, replaces the wall clock (tests).
	Clock func() time.Duration
}

func (o Options) withDefaults() Options {
	if o.Policy == "" {
		o.Policy = DefaultPolicy
	}
	if o.Fallback == "" {
		o.Fallback = DefaultPolicy
	}
	if o.Yield == nil {
		o.Yield = runtime.Gosched
	}
	if o.TenantInFlight <= 0 {
		o.TenantInFlight = DefaultTenantInFlight
	}
	if o.Lookahead <= 0 {
		o.Lookahead = DefaultLookahead
	}
	if o.CopyLookahead == 0 {
		o.CopyLookahead = DefaultCopyLookahead
	}
	if o.SliceTarget == 0 {
		o.SliceTarget = DefaultSliceTarget
	}
	if o.LowClassPoll == 0 {
		o.LowClassPoll = DefaultLowClassPoll
	}
	if o.Reserve == 0 {
		o.Reserve = DefaultReserve
	}
	if o.HookDeadline <= 0 {
		o.HookDeadline = DefaultHookDeadline
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.MaxHold <= 0 {
		o.MaxHold = DefaultMaxHold
	}
	if o.TickInterval <= 0 {
		o.TickInterval = DefaultTickInterval
	}
	if o.TrackEvery <= 0 {
		o.TrackEvery = DefaultTrackEvery
	}
	if o.FlushDelay <= 0 {
		o.FlushDelay = DefaultFlushDelay
	}
	return o
}

// Share is a tenant's virtual GPU: its weights on the compute and copy
// engines, its memory share and its class.
type Share struct {
	Compute int    // compute weight, >= 1
	Copy    int    // copy-bandwidth weight, >= 1
	Memory  uint64 // memory share (quota) in bytes; 0: none
	Class   Class
	// ClassSet: Class was configured. Otherwise the tenant's class is the
	// highest class of its open sessions (each from its process's nice value).
	ClassSet bool
}

func (sh Share) check() error {
	if sh.Compute < 1 || sh.Copy < 1 || sh.Compute > 1<<20 || sh.Copy > 1<<20 {
		return fmt.Errorf("%w: weights compute=%d copy=%d (want 1..%d)", ErrInvalidShare, sh.Compute, sh.Copy, 1<<20)
	}
	if sh.Class < ClassLow || sh.Class > ClassHigh {
		return fmt.Errorf("%w: class %d", ErrInvalidShare, sh.Class)
	}
	return nil
}

// Scheduler dispatches the commands of all queues of one device.
//
// There is no dedicated dispatcher on the hot path: whichever goroutine makes
// progress possible — a submitter, a completion waiter, the background
// goroutine — dispatches, one at a time (the dispatch token), calling the
// backend without the lock held. A submitter dispatches at most a few
// commands before handing the rest to the background goroutine.
type Scheduler struct {
	opts  Options
	dev   backend.Device
	epoch time.Time

	// inDriver counts the goroutines issuing commands (their backend
	// calls, between the lock's release and its retaking in issueLocked),
	// with Options.CountIssuing: for latency diagnostics (InDriver). On a
	// line of its own, away from the lock.
	_        [64]byte
	inDriver atomic.Int32
	_        [60]byte

	mu       sync.Mutex
	tenants  []*tenant
	byName   map[string]*tenant
	maps     map[string]*Map
	eng      [NumEngines]engineState
	seq      uint64
	turn     Engine // engine to consider first in the next decision
	closed   bool
	host     Host
	policies []*policyEntry
	active   *policyEntry
	fallback *policyEntry
	rescue   *policyEntry // last resort if the fallback itself fails

	clk          int64       // the clock as of the current round (tick)
	dispatching  bool        // the dispatch token
	expressed    int64       // commands issued by the express lane (express.go)
	expressing   int         // express issues in progress: the token holder stops
	expressReady [1]TenantID // the express lane's ready list, for OnDispatch
	tails        []*streamQ
	flushAll     bool
	flushOlder   int64 // flush tails opened at or before this time
	bgNext       int64 // when the background goroutine means to wake; -1: only when kicked
	nextTick     int64
	waiters      map[backend.Stream]*waiter
	spinner      lowSpinner         // the low class's spinner (lowspin.go)
	episode      episodeWatch       // the service's slow spells (episode.go)
	gating       int                // turn gates being recorded (turns.go)
	gateIdle     *sync.Cond         // gating fell to 0
	events       [2][]backend.Event // pools: untimed, timed
	points       []*point
	ready        [NumEngines][]TenantID

	// missed: a goroutine left what it would have dispatched to the token's
	// holder since a pass of runLocked last found nothing more to do; an
	// express holder, which looks at the high class only, then owes a kick.
	missed bool

	// highReserved: the high class has SMs no other class's stream runs on
	// (SetHighClassReserved).
	highReserved atomic.Bool

	bgWake chan struct{}
	bgDone chan struct{}
	// gen counts events that may allow dispatching (Batched submissions,
	// completions) which the goroutine that noticed them left to the
	// background goroutine, because bgAwake said it would look: it compares
	// gen before it sleeps. Writers add to gen, then read bgAwake; the
	// background goroutine clears bgAwake, then reads gen.
	gen       atomic.Uint64
	bgAwake   atomic.Bool
	hookStart atomic.Int64 // when the running untrusted hook began; 0 if none
	watch     atomic.Pointer[policyEntry]
	watchStop chan struct{}
}

type policyEntry struct {
	p       Policy
	desc    string
	builtin bool
	trusted bool // built in: hooks are not timed
	ejected string
}

func newEntry(p Policy, desc string) *policyEntry {
	_, trusted := p.(trustedPolicy)
	return &policyEntry{p: p, desc: desc, trusted: trusted}
}

// engineState is the device-wide state of one engine.
type engineState struct {
	inflight     int   // parts issued and not complete
	inflightCost int64 // their estimated charge
	// Accounting chains and turns by group (turns.go; timed: compute only).
	chains     []*chain
	held       bool     // the policy asked for nothing until the next event
	holdUntil  int64    // and to be asked again at this time (0: no timer)
	readySince int64    // work ready, nothing in flight and nothing dispatched since; 0 if not
	sliced     *Command // a partly issued command last dispatched here
}

// tenant is one tenant's state.
type tenant struct {
	id     TenantID
	name   string
	share  Share
	queues []*Queue
	// classNow is class(), kept as share and queues change (classChanged)
	// for readers without the lock (Queue.Class).
	classNow atomic.Int32
	active   []*streamQ // streams with queued commands
	eng      [NumEngines]tenantEngine
	head     [NumEngines]*streamQ // decision scratch: the stream whose head it would issue
	// expressing: the express lane is issuing one of its commands
	// (express.go).
	expressing bool
}

type tenantEngine struct {
	queued       int
	inflight     int
	usage        int64
	avg          int64   // per-command charge estimate
	startSkips   uint32  // high class: points since the last with a start event
	recent       float64 // decayed recent usage
	dispatched   uint64
	delay        int64 // total queue delay, ns
	completed    uint64
	inflightCost int64
}

func (t *tenant) weight(e Engine) int {
	if e == EngineCopy {
		return t.share.Copy
	}
	return t.share.Compute
}

// classChanged updates classNow after share or queues changed.
func (t *tenant) classChanged() { t.classNow.Store(int32(t.class())) }

func (t *tenant) class() Class {
	if t.share.ClassSet || len(t.queues) == 0 {
		return t.share.Class
	}
	c := ClassLow
	for _, q := range t.queues {
		c = max(c, q.class)
	}
	return c
}

// New starts a scheduler with the built-in policies registered.
func New(opts Options) (*Scheduler, error) {
	opts = opts.withDefaults()
	s := &Scheduler{
		opts:    opts,
		dev:     opts.Device,
		epoch:   time.Now(),
		byName:  map[string]*tenant{},
		maps:    map[string]*Map{},
		waiters: map[backend.Stream]*waiter{},
		bgWake:  make(chan struct{}, 1),
		bgDone:  make(chan struct{}),
	}
	s.host.s = s
	s.gateIdle = sync.NewCond(&s.mu)
	s.spinner.cond = sync.NewCond(&s.mu)
	s.flushOlder, s.bgNext = -1, -1
	for _, b := range Builtins() {
		pe := newEntry(b.New(), b.Description)
		pe.builtin = true
		s.policies = append(s.policies, pe)
	}
	s.rescue = s.entry("fifo") // cannot fail: the last resort
	s.fallback = s.entry(opts.Fallback)
	if s.fallback == nil {
		return nil, fmt.Errorf("fallback policy %q: %w", opts.Fallback, ErrNoPolicy)
	}
	s.active = s.entry(opts.Policy)
	if s.active == nil {
		return nil, fmt.Errorf("policy %q: %w", opts.Policy, ErrNoPolicy)
	}
	s.mu.Lock()
	err := s.guard(s.active, func(p Policy) error { return p.Init(&s.host) })
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("start policy %s: %w", opts.Policy, err)
	}
	go s.background()
	return s, nil
}

// tick reads the clock into s.clk, which the dispatcher uses for the rest of
// a round: reading the clock costs more than a decision on some machines.
func (s *Scheduler) tick() int64 {
	s.clk = s.now()
	return s.clk
}

// now is the scheduler clock in ns.
func (s *Scheduler) now() int64 {
	if s.opts.Clock != nil {
		return int64(s.opts.Clock())
	}
	return int64(time.Since(s.epoch))
}

func (s *Scheduler) entry(name string) *policyEntry {
	for _, e := range s.policies {
		if e.p.Name() == name {
			return e
		}
	}
	return nil
}

// tenantLocked returns the tenant with this name, creating it with share.
func (s *Scheduler) tenantLocked(name string, share Share) *tenant {
	if t, ok := s.byName[name]; ok {
		return t
	}
	t := &tenant{id: TenantID(len(s.tenants)), name: name, share: share}
	t.classChanged()
	for e := range t.eng {
		t.eng[e].avg = 10_000
	}
	s.tenants = append(s.tenants, t)
	s.byName[name] = t
	return t
}

// SetShare sets (or creates) a tenant's virtual GPU. It applies at once:
// later decisions use the new weights and class.
func (s *Scheduler) SetShare(name string, sh Share) error {
	if err := sh.check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenantLocked(name, sh)
	t.share = sh
	t.classChanged()
	s.runLocked(0)
	return nil
}

// Share returns a tenant's share.
func (s *Scheduler) Share(name string) (Share, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.byName[name]
	if !ok {
		return Share{}, false
	}
	return t.share, true
}

// SetHighClassReserved tells the policies whether the high class has SMs of
// its own: the other classes' streams run in a partition of the rest (the
// driver's reserve_sms). A kernel of the high class then finds SMs free
// without the others' kernels being held back in slices, which would cost
// them throughput and the host a driver call and a completion per slice.
func (s *Scheduler) SetHighClassReserved(on bool) { s.highReserved.Store(on) }

// HighClassReserved reports what SetHighClassReserved last set.
func (s *Scheduler) HighClassReserved() bool { return s.highReserved.Load() }

// TenantClass returns a tenant's effective class (ClassNormal if unknown).
func (s *Scheduler) TenantClass(name string) Class {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.byName[name]; ok {
		return t.class()
	}
	return ClassNormal
}

// QueueParams configure a session's queue.
type QueueParams struct {
	Tenant  string
	Session uint64
	PID     int32
	// Class is the session's own class (from its process's nice value); it
	// counts when the tenant's class is not configured.
	Class Class
	// Depth bounds the commands waiting in the queue (default 4096): Submit
	// blocks beyond it, so a flooding client is slowed, not buffered.
	Depth int
	// Share is the tenant's share if the tenant does not exist yet.
	Share Share
}

// Queue is one session's commands, in per-stream order.
type Queue struct {
	s       *Scheduler
	t       *tenant
	session uint64
	pid     int32
	class   Class
	depth   int
	streams map[backend.Stream]*streamQ
	last    *streamQ
	// Commands queued (not completely issued) and in flight (issued, at least
	// partly, and not complete).
	queued, inflight int
	issuing          int // commands being issued: their Issue has not returned
	waiting          int // goroutines in Wait: track completions at once
	waitingIssue     int // goroutines in WaitIssued
	waitingRoom      int // goroutines in Submit waiting for room
	holds            int // Hold (hold.go): while positive, nothing new of the queue is issued
	closed           bool
	room, idle       *sync.Cond
	issued           *sync.Cond // WaitIssued: nothing queued or being issued
	lowWater         int        // a full queue takes submissions again from here
	st               QueueStats
	// settled: nothing was queued or being issued at the latest change.
	// Its submitter sees its own submissions unsettle it, so Flush and
	// WaitIssued trust it without the lock when it is set; unset, WaitIssued
	// polls it and decides under the lock.
	settled atomic.Bool
	// shut mirrors closed for WaitIssued's lock-free look.
	shut atomic.Bool
	// dirtyMu guards the streams' dirty flags and dirtyList, the streams
	// with commands issued since WaitIssued last looked: a synchronizer
	// whose queue is settled takes them without the scheduler's lock.
	dirtyMu   sync.Mutex
	dirtyList []*streamQ
	// own: the queue keeps its tracked points for its submitter to
	// complete (own.go); owned[ownedHead:] are those it holds, hasOwned
	// says whether there are any without the lock.
	own       bool
	owned     []*point
	ownedHead int
	hasOwned  atomic.Bool
	reaped    []*Command // Reap's spare
	// deferKicks: the queue's high-class submissions leave the background
	// goroutine's wake-up owed (kickOwed) for Kick (kick.go).
	deferKicks bool
	kickOwed   atomic.Bool
}

// QueueStats are a queue's counters.
type QueueStats struct {
	Submitted, Completed, Errors uint64
	Queued, InFlight             int
	QueueDelay                   time.Duration // total time commands waited before issue
	GPUTime                      time.Duration // compute time charged
	CopyBytes                    uint64        // copy bytes charged
	Reaped                       uint64        // completion events its submitter completed (Reap)
	KicksDeferred                uint64        // background wake-ups its submissions left owed (kick.go)
	KicksSpared                  uint64        // and those they spared: completions or timers will come to what they left (dispatcherOwedLocked)
	SpunEnds                     uint64        // points the low class's spinner completed (lowspin.go)
	KicksToSpinner               uint64        // background wake-ups its batched submissions left to the spinning spinner instead
	FenceEnds                    uint64        // points that ended at their command's fence, no event recorded (fenceend.go)
}

// NewQueue opens a session's queue. The policy may refuse the session.
func (s *Scheduler) NewQueue(p QueueParams) (*Queue, error) {
	if p.Depth < 1 {
		p.Depth = 4096
	}
	if p.Share.Compute < 1 {
		p.Share.Compute = 1
	}
	if p.Share.Copy < 1 {
		p.Share.Copy = p.Share.Compute
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	t := s.tenantLocked(p.Tenant, p.Share)
	q := &Queue{s: s, t: t, session: p.Session, pid: p.PID, class: p.Class, depth: p.Depth,
		streams: map[backend.Stream]*streamQ{}}
	// A submitter that met a full queue is woken once a quarter of it has
	// been issued, not at each issue: one wake-up per many commands.
	q.lowWater = p.Depth - max(p.Depth/4, 1)
	q.room = sync.NewCond(&s.mu)
	q.idle = sync.NewCond(&s.mu)
	q.issued = sync.NewCond(&s.mu)
	t.queues = append(t.queues, q)
	t.classChanged()
	ev := SessionEvent{Tenant: t.id, Session: p.Session, PID: p.PID, Class: p.Class}
	var refused error
	for {
		a := s.active
		err := s.guard(a, func(pol Policy) error {
			refused = pol.OnSessionOpen(&s.host, ev)
			return nil
		})
		if err == nil || !s.ejectLocked(a, err) {
			break
		}
	}
	if refused != nil {
		t.removeQueue(q)
		return nil, fmt.Errorf("%w: %v", ErrRefused, refused)
	}
	return q, nil
}

func (t *tenant) removeQueue(q *Queue) {
	for i, x := range t.queues {
		if x == q {
			t.queues = append(t.queues[:i], t.queues[i+1:]...)
			t.classChanged()
			return
		}
	}
}

// Tenant returns the queue's tenant name.
func (q *Queue) Tenant() string { return q.t.name }

// Class returns the queue's tenant's class, as TenantClass does, without
// the scheduler's lock: for checks on a session's wait paths.
func (q *Queue) Class() Class { return Class(q.t.classNow.Load()) }

// stream returns the FIFO of a backend stream, creating it.
func (q *Queue) stream(st backend.Stream) *streamQ {
	if q.last != nil && q.last.st == st {
		return q.last
	}
	sq := q.streams[st]
	if sq == nil {
		sq = &streamQ{q: q, st: st}
		q.streams[st] = sq
	}
	q.last = sq
	return sq
}

// Submit appends c to its stream's FIFO, blocking while the queue holds Depth
// commands. It fails if the queue or scheduler closes or ctx ends first. The
// command may be issued before Submit returns: into an idle scheduler, a
// command is issued by the submitter itself (the shortest path to the
// device), unless it is Batched.
func (q *Queue) Submit(ctx context.Context, c *Command) error {
	s := q.s
	s.mu.Lock()
	if c.TimeLock {
		c.Locked = time.Now()
	}
	if q.queued >= q.depth && !q.closed && !s.closed && ctx.Err() == nil {
		// What this submitter left for a dispatcher must not wait for it,
		// nor its completions for it.
		s.kick()
		s.handOffLocked(q)
		if ctx.Done() != nil {
			stop := context.AfterFunc(ctx, func() {
				s.mu.Lock()
				q.room.Broadcast()
				s.mu.Unlock()
			})
			defer stop()
		}
		q.waitingRoom++
		for q.queued >= q.depth && !q.closed && !s.closed && ctx.Err() == nil {
			q.room.Wait()
		}
		q.waitingRoom--
	}
	switch {
	case q.closed || s.closed:
		s.mu.Unlock()
		return ErrClosed
	case ctx.Err() != nil:
		s.mu.Unlock()
		return fmt.Errorf("submit: %w", ctx.Err())
	}
	s.seq++
	c.seq, c.queued, c.state, c.q = s.seq, s.tick(), cmdQueued, q
	c.next, c.pending, c.err = 0, 0, nil
	sq := q.stream(c.Stream)
	sq.push(c)
	t := q.t
	if !sq.inActive {
		sq.inActive = true
		t.active = append(t.active, sq)
	}
	q.queued++
	q.settled.Store(false)
	q.st.Submitted++
	if c.Kind != Marker {
		e := c.Kind.engine()
		t.eng[e].queued++
		s.eng[e].held = false
		ev := SubmitEvent{Tenant: t.id, Engine: e, Session: q.session, Cost: s.cost(c, e, 0)}
		s.hookLocked(func(p Policy) error { return p.OnSubmit(&s.host, ev) })
	}
	if c.Flags&Batched != 0 && (t.class() < ClassHigh || s.opts.NoHighFirst) {
		// Leave it to the dispatcher goroutine: wake it once a second
		// command waits (a lone one is issued by Flush or a synchronizing
		// call, sooner than a wake-up would). Not a high-class command: a
		// service's launch with its synchronize already behind it on the
		// ring was issued by the dispatcher goroutine, and the synchronize
		// waited for that goroutine's issue and bookkeeping: 20-34 µs at
		// P99 under load against 1.5-4.4 alone (bench/RESULTS.md, runs 41-45).
		// It issues its own.
		s.gen.Add(1)
		if s.dispatching {
			s.missed = true
		} else if !s.bgAwake.Load() && q.queued >= 2 {
			if s.spinner.dispatchLocked() {
				q.st.KicksToSpinner++
			} else {
				s.kick()
			}
		}
	} else {
		s.runForLocked(q, submitBudget)
	}
	s.mu.Unlock()
	return nil
}

// Flush issues on the calling goroutine what the queue's Batched
// submissions left for the dispatcher goroutine, unless a dispatcher is at
// work: a submitter calls it when its burst ends.
func (q *Queue) Flush() {
	// Nothing queued or being issued (the submitter sees its own
	// submissions unsettle the queue): no need for the scheduler's lock,
	// which a service's serving goroutine otherwise took twice a request
	// (the lock's contended waits at Flush averaged 22 µs in run 44's
	// mutex profile).
	if q.settled.Load() {
		return
	}
	s := q.s
	s.mu.Lock()
	if q.queued > 0 && s.dispatching {
		s.missed = true
	} else if q.queued > 0 && !s.bgAwake.Load() {
		s.runForLocked(q, submitBudget)
	}
	s.mu.Unlock()
}

// WaitIssued blocks until every command submitted to the queue so far has
// been issued to its stream (its Issue returned, and a failed one's Done ran)
// or dropped (then it returns ErrClosed), dispatching on the calling
// goroutine when no one else is. It appends to streams the backend streams
// that had commands issued since the previous call and returns them: once
// those are synchronized, everything the queue was given has completed on
// the device, though its completion may not be accounted (or its Done run)
// yet — Wait waits for that too. A synchronizing call that only needs the
// device to be done thus spares the completion tracking's hand-offs.
func (q *Queue) WaitIssued(ctx context.Context, streams []backend.Stream) ([]backend.Stream, error) {
	// Settled (what the caller submitted was issued, and marked its
	// streams before it settled the queue): no need for the scheduler's
	// lock, which other tenants' goroutines hold often under load.
	if q.settled.Load() && !q.shut.Load() && ctx.Err() == nil {
		return q.takeDirty(streams), nil
	}
	s := q.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.queued > 0 {
		s.runForLocked(q, 0)
	}
	if (q.queued > 0 || q.issuing > 0) && !q.closed && ctx.Err() == nil && s.opts.Spin > 0 {
		// Another goroutine holds the dispatch token and is issuing (a
		// completion waiter, usually in the backend for another tenant's
		// work): poll for a while rather than sleep on the condition, so
		// the caller — a synchronizing request, often a latency-critical
		// one — does not also wait for its goroutine to be woken.
		s.mu.Unlock()
		for start := time.Now(); !q.settled.Load() && ctx.Err() == nil && time.Since(start) < s.opts.Spin; {
			s.opts.Yield()
		}
		s.mu.Lock()
	}
	if (q.queued > 0 || q.issuing > 0) && !q.closed && ctx.Err() == nil {
		if ctx.Done() != nil {
			stop := context.AfterFunc(ctx, func() {
				s.mu.Lock()
				q.issued.Broadcast()
				s.mu.Unlock()
			})
			defer stop()
		}
		s.handOffLocked(q) // issuing may wait for room its completions free
		q.waitingIssue++
		for (q.queued > 0 || q.issuing > 0) && !q.closed && ctx.Err() == nil {
			q.issued.Wait()
		}
		q.waitingIssue--
	}
	switch {
	case q.closed:
		return streams, ErrClosed
	case ctx.Err() != nil:
		return streams, fmt.Errorf("wait for issue: %w", ctx.Err())
	}
	return q.takeDirty(streams), nil
}

// markDirty notes that a command was issued to sq.
func (q *Queue) markDirty(sq *streamQ) {
	q.dirtyMu.Lock()
	if !sq.dirty {
		sq.dirty = true
		q.dirtyList = append(q.dirtyList, sq)
	}
	q.dirtyMu.Unlock()
}

// takeDirty appends the backend streams issued to since the last call to
// streams, and forgets them.
func (q *Queue) takeDirty(streams []backend.Stream) []backend.Stream {
	q.dirtyMu.Lock()
	for i, sq := range q.dirtyList {
		sq.dirty = false
		if sq.st != nil {
			streams = append(streams, sq.st)
		}
		q.dirtyList[i] = nil
	}
	q.dirtyList = q.dirtyList[:0]
	q.dirtyMu.Unlock()
	return streams
}

// IssuedStreams appends to streams the backend streams issued to since the
// last WaitIssued, without forgetting them, and reports true, if all the
// queue was given was issued; else it appends nothing and reports false.
// Its caller is the queue's only submitter (the queue then stays settled
// while it looks). It takes no scheduler lock.
func (q *Queue) IssuedStreams(streams []backend.Stream) ([]backend.Stream, bool) {
	if !q.settled.Load() || q.shut.Load() {
		return streams, false
	}
	q.dirtyMu.Lock()
	for _, sq := range q.dirtyList {
		if sq.st != nil {
			streams = append(streams, sq.st)
		}
	}
	q.dirtyMu.Unlock()
	return streams, true
}

// forgetDirty drops sq, whose stream is being destroyed, from the list.
func (q *Queue) forgetDirty(sq *streamQ) {
	q.dirtyMu.Lock()
	if sq.dirty {
		sq.dirty = false
		q.dirtyList = slices.DeleteFunc(q.dirtyList, func(x *streamQ) bool { return x == sq })
	}
	q.dirtyMu.Unlock()
}

// settledLocked wakes WaitIssued once nothing of the queue is queued or
// being issued.
func (q *Queue) settledLocked() {
	if q.queued == 0 && q.issuing == 0 {
		q.settled.Store(true)
		if q.waitingIssue > 0 {
			q.issued.Broadcast()
		}
	}
}

// submitBudget is how many dispatch actions a submitter performs before
// handing the rest to the background goroutine.
const submitBudget = 8

// Stats returns the queue's counters.
func (q *Queue) Stats() QueueStats {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	st := q.st
	st.Queued, st.InFlight = q.queued, q.inflight
	return st
}

// Wait blocks until every command submitted so far has completed, or was
// dropped (or ctx ends).
func (q *Queue) Wait(ctx context.Context) error {
	s := q.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.queued == 0 && q.inflight == 0 {
		return ctx.Err()
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			s.mu.Lock()
			q.idle.Broadcast()
			s.mu.Unlock()
		})
		defer stop()
	}
	q.waiting++
	s.handOffLocked(q)
	s.runLocked(0) // track what is in flight untracked
	for (q.queued > 0 || q.inflight > 0) && ctx.Err() == nil {
		q.idle.Wait()
	}
	q.waiting--
	return ctx.Err()
}

// Close removes the queue: commands not yet issued complete with ErrClosed (a
// partly issued sliced kernel does once its issued slices complete); commands
// in flight complete normally.
func (q *Queue) Close() {
	s := q.s
	s.mu.Lock()
	if q.closed {
		s.mu.Unlock()
		return
	}
	q.closed = true
	q.shut.Store(true)
	if q.kickOwed.Swap(false) {
		s.kick()
	}
	s.handOffLocked(q) // in flight: completes normally
	t := q.t
	t.removeQueue(q)
	var dropped, finished []*Command
	for _, sq := range q.streams {
		for sq.len() > 0 {
			c := sq.pop()
			q.queued--
			if c.Kind != Marker {
				t.eng[c.Kind.engine()].queued--
			}
			if c.state == cmdIssuing {
				// Partly issued: it finishes when its issued slices do.
				c.state = cmdIssued
				if c.err == nil {
					c.err = ErrClosed
				}
				if c.pending == 0 {
					q.finishLocked(c)
					finished = append(finished, c)
				}
				continue
			}
			c.state = cmdDropped
			dropped = append(dropped, c)
		}
		if sq.inActive {
			t.removeActive(sq)
		}
	}
	q.room.Broadcast()
	q.issued.Broadcast()
	if q.queued == 0 && q.inflight == 0 {
		q.idle.Broadcast()
	}
	s.runLocked(0)
	s.mu.Unlock()
	for _, c := range dropped {
		if c.Done != nil {
			c.Done(ErrClosed)
		}
	}
	for _, c := range finished {
		if c.Done != nil {
			c.Done(c.err)
		}
	}
}

func (t *tenant) removeActive(sq *streamQ) {
	for i, x := range t.active {
		if x == sq {
			t.active = append(t.active[:i], t.active[i+1:]...)
			break
		}
	}
	sq.inActive = false
}

// Forget stops tracking a stream that is being destroyed; call it after the
// stream's work has completed (Queue.Wait).
func (s *Scheduler) Forget(st backend.Stream) {
	s.mu.Lock()
	s.forgetTurnsLocked(st)
	w := s.waiters[st]
	delete(s.waiters, st)
	if w != nil {
		w.closed = true
		w.cond.Signal()
	}
	for _, t := range s.tenants {
		for _, q := range t.queues {
			if sq := q.streams[st]; sq != nil && sq.len() == 0 && sq.tail == nil {
				q.forgetDirty(sq)
				delete(q.streams, st)
				if q.last == sq {
					q.last = nil
				}
			}
		}
	}
	s.mu.Unlock()
}

// Close stops the scheduler: queued commands complete with ErrClosed; work in
// flight is tracked to completion.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	var queues []*Queue
	for _, t := range s.tenants {
		queues = append(queues, t.queues...)
	}
	s.mu.Unlock()
	for _, q := range queues {
		q.Close()
	}
	s.mu.Lock()
	s.closed = true
	s.flushAll = true
	s.runLocked(0)
	for s.dispatching {
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
	}
	for st, w := range s.waiters {
		w.closed = true
		w.cond.Signal()
		delete(s.waiters, st)
	}
	s.spinner.wakeLocked() // it ends once it holds no waiter
	s.mu.Unlock()
	s.kick()
	<-s.bgDone
	s.stopWatch()
}

// streamQ is the FIFO of one stream of one queue.
type streamQ struct {
	q        *Queue
	st       backend.Stream
	cmds     []*Command
	head     int
	inActive bool
	tail     *point // issued commands not yet covered by a completion event
	inTails  bool
	dirty    bool // commands were issued since WaitIssued last looked (q.dirtyMu)
}

func (sq *streamQ) len() int { return len(sq.cmds) - sq.head }

func (sq *streamQ) front() *Command { return sq.cmds[sq.head] }

func (sq *streamQ) push(c *Command) {
	if sq.head > 0 && sq.head == len(sq.cmds) {
		sq.cmds, sq.head = sq.cmds[:0], 0
	} else if sq.head > 64 && sq.head*2 > len(sq.cmds) {
		n := copy(sq.cmds, sq.cmds[sq.head:])
		clear(sq.cmds[n:])
		sq.cmds, sq.head = sq.cmds[:n], 0
	}
	sq.cmds = append(sq.cmds, c)
}

func (sq *streamQ) pop() *Command {
	c := sq.cmds[sq.head]
	sq.cmds[sq.head] = nil
	sq.head++
	return c
}

// InDriver returns how many goroutines are issuing commands right now,
// making backend calls for them (a command's Issue, its events, its turn's
// gate): read by a command's own Issue, it counts that command too. For
// latency diagnostics: whether a latency-critical launch's driver call
// overlapped other tenants'. Without Options.CountIssuing, -1.
func (s *Scheduler) InDriver() int {
	if !s.opts.CountIssuing {
		return -1
	}
	return int(s.inDriver.Load())
}

// countIssuing adds d to the goroutines issuing commands, with
// Options.CountIssuing (InDriver).
func (s *Scheduler) countIssuing(d int32) {
	if s.opts.CountIssuing {
		s.inDriver.Add(d)
	}
}

// LowClassPoll is how often the low class's completion waiters query their
// events (Options.LowClassPoll after its default; negative: they wait in
// the backend). The driver paces other waits of that class by it.
func (s *Scheduler) LowClassPoll() time.Duration { return s.opts.LowClassPoll }
