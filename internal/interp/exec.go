package interp

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Execution model. Blocks are handed out to Workers goroutines in index order.
// Inside a block, threads are state machines run one after another on the
// worker's goroutine: a thread runs until it exits, arrives at a barrier or a
// warp collective, or uses up its time slice; a collective completes when all
// its participants have arrived, and they become runnable again. For a
// correctly synchronised program this is indistinguishable from independent
// thread scheduling.

// budget is how many instructions a thread runs before the scheduler moves on
// to the next runnable thread (so spin-waits on other threads make progress)
// and checks for cancellation and the watchdog.
const budget = 4096

// Thread states.
const (
	tsReady uint8 = iota
	tsBar         // waiting at a CTA barrier
	tsWarp        // waiting at a warp collective
	tsExited
)

// Outcomes of running a thread's slice.
type status uint8

const (
	stExit status = iota
	stBar
	stWarp
	stBudget
	stFault
)

type frame struct {
	fn                  *function
	pc                  int32
	rbase, pbase, lbase int
	site                *callSite
}

type thread struct {
	fn     *function
	regs   []uint64 // the current frame: stack[rbase : rbase+fn.nslots]
	pc     int32
	stack  []uint64
	rbase  int
	frames []frame
	local  []byte
	lbase  int
	pstack []byte
	pbase  int

	icount  uint64 // instructions executed
	sleepNs uint64 // time spent in nanosleep

	tid    [3]uint32
	linear uint32 // index in the block
	state  uint8

	// A pending collective: its instruction, operand values and membermask.
	cin   *inst
	cval  [3]uint64
	cmask uint32
}

// grid is the state one Run shares between its workers.
type grid struct {
	k      *Kernel
	l      *Launch
	ctx    context.Context
	blocks uint64
	next   atomic.Uint64
	instrs atomic.Uint64
	stop   atomic.Bool

	mu    sync.Mutex
	fault *Fault
	order uint64 // block index of fault

	printMu sync.Mutex // keeps each printf call's text in one piece
}

func (g *grid) setFault(f *Fault, block uint64) {
	g.mu.Lock()
	if g.fault == nil || block < g.order {
		g.fault, g.order = f, block
	}
	g.mu.Unlock()
	g.stop.Store(true)
}

// Run executes the grid. It returns a *Fault when the kernel faults, the
// launch is invalid or ctx is canceled, and ErrUnbound if the program has
// globals that Bind has not placed.
func (k *Kernel) Run(ctx context.Context, l Launch) (Result, error) {
	if !k.prog.isBound() {
		return Result{}, fmt.Errorf("run kernel %s: %w", k.name, ErrUnbound)
	}
	if f := k.checkLaunch(&l); f != nil {
		return Result{}, f
	}
	g := &grid{k: k, l: &l, ctx: ctx}
	g.blocks = uint64(l.Grid[0]) * uint64(l.Grid[1]) * uint64(l.Grid[2])
	workers := l.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if uint64(workers) > g.blocks {
		workers = int(g.blocks)
	}
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = newWorker(g)
	}
	if workers == 1 {
		ws[0].loop() // small launches skip the goroutine hand-off
	} else {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.loop()
			}()
		}
		wg.Wait()
	}
	var res Result
	for _, w := range ws {
		res.Instructions += w.total
		res.GlobalBytesRead += w.read
		res.GlobalBytesWritten += w.written
		res.Blocks += w.blocks
	}
	if g.fault != nil {
		return res, g.fault
	}
	if res.Blocks < g.blocks {
		// No fault, so the launch stopped because ctx was canceled.
		return res, &Fault{Kind: FaultCanceled, Kernel: k.name, Err: ctx.Err()}
	}
	return res, nil
}

func (k *Kernel) checkLaunch(l *Launch) *Fault {
	bad := func(format string, args ...any) *Fault {
		return &Fault{Kind: FaultInvalidLaunch, Kernel: k.name, Detail: fmt.Sprintf(format, args...)}
	}
	g, b := l.Grid, l.Block
	switch {
	case g[0] == 0 || g[1] == 0 || g[2] == 0:
		return bad("grid (%d,%d,%d) has a zero dimension", g[0], g[1], g[2])
	case g[0] > MaxGridX || g[1] > MaxGridYZ || g[2] > MaxGridYZ:
		return bad("grid (%d,%d,%d) is too large", g[0], g[1], g[2])
	case b[0] == 0 || b[1] == 0 || b[2] == 0:
		return bad("block (%d,%d,%d) has a zero dimension", b[0], b[1], b[2])
	case b[0] > 1024 || b[1] > 1024 || b[2] > 64:
		return bad("block (%d,%d,%d) is too large", b[0], b[1], b[2])
	}
	n := uint64(b[0]) * uint64(b[1]) * uint64(b[2])
	if n > uint64(k.attrs.MaxThreadsPerBlock) {
		return bad("block of %d threads exceeds the kernel's limit of %d", n, k.attrs.MaxThreadsPerBlock)
	}
	if r := k.reqntid; r[0] != 0 && (int(b[0]) != r[0] || int(b[1]) != r[1] || int(b[2]) != r[2]) {
		return bad("block (%d,%d,%d) differs from .reqntid %d, %d, %d", b[0], b[1], b[2], r[0], r[1], r[2])
	}
	if sh := uint64(k.sharedTotal(l.DynamicShared)); sh > MaxSharedPerBlock {
		return bad("%d bytes of shared memory exceed the limit of %d", sh, MaxSharedPerBlock)
	}
	if len(l.Params) < k.psize {
		return bad("parameter buffer of %d bytes is shorter than the kernel's %d", len(l.Params), k.psize)
	}
	if l.Global == nil && k.psize+len(k.prog.globals) > 0 {
		// A kernel with no pointer to reach global memory could run without
		// one, but a nil Memory is almost certainly a caller's mistake.
		return bad("no global memory")
	}
	return nil
}

// sharedTotal is the block's shared memory: static, then dynamic at the
// alignment its extern declarations ask for.
func (k *Kernel) sharedTotal(dyn uint32) int {
	if dyn == 0 {
		return k.shared
	}
	return alignUp(k.shared, k.dynAlign) + int(dyn)
}

func alignUp(n, a int) int {
	if a <= 1 {
		return n
	}
	return (n + a - 1) / a * a
}

// worker runs blocks on one goroutine and keeps their storage between blocks.
type worker struct {
	g      *grid
	mem    Memory
	params []byte
	blk    block

	pending uint64 // instructions not yet added to g.instrs
	total   uint64
	read    uint64
	written uint64
	blocks  uint64

	fault *Fault
}

func newWorker(g *grid) *worker {
	w := &worker{g: g, mem: g.l.Global, params: g.l.Params}
	w.blk.init(g.k, g.l)
	return w
}

func (w *worker) loop() {
	for !w.g.stop.Load() {
		i := w.g.next.Add(1) - 1
		if i >= w.g.blocks {
			return
		}
		if w.g.ctx.Err() != nil {
			w.g.stop.Store(true)
			return
		}
		if f := w.runBlock(i); f != nil {
			w.g.setFault(f, i)
			return
		}
		if w.g.stop.Load() {
			return // canceled or stopped by another worker's fault mid-block
		}
		w.blocks++
	}
}

// flush adds this worker's recent instructions to the grid's total and checks
// the watchdog and cancellation. It reports whether the block should stop.
func (w *worker) flush() bool {
	if w.pending != 0 {
		n := w.g.instrs.Add(w.pending)
		w.pending = 0
		if max := w.g.l.MaxInstructions; max != 0 && n > max {
			w.fault = &Fault{Kind: FaultWatchdog, Kernel: w.g.k.name,
				Detail: fmt.Sprintf("more than %d instructions executed", max)}
			return true
		}
	}
	if w.g.stop.Load() {
		return true
	}
	if err := w.g.ctx.Err(); err != nil {
		w.g.stop.Store(true)
		return true
	}
	return false
}

func (w *worker) runBlock(linear uint64) *Fault {
	b := &w.blk
	b.start(linear)
	w.fault = nil
	for {
		for b.qlen > 0 {
			i := b.pop()
			t := &b.threads[i]
			st := w.run(t)
			switch st {
			case stExit:
				b.exit(t)
			case stBar:
				b.arriveBar(t)
			case stWarp:
				b.arriveWarp(t)
			case stBudget:
				b.push(i)
			case stFault:
				return w.fault
			}
			// Check the watchdog and cancellation every budget instructions,
			// however the threads are scheduled between them.
			if w.pending >= budget && w.flush() {
				return w.fault
			}
		}
		if b.exited == len(b.threads) {
			break
		}
		if !b.resolveActivemask() {
			return w.deadlock()
		}
	}
	if w.flush() {
		return w.fault
	}
	return nil
}

// deadlock reports the first blocked thread.
func (w *worker) deadlock() *Fault {
	b := &w.blk
	for i := range b.threads {
		t := &b.threads[i]
		if t.state == tsExited {
			continue
		}
		what := "a warp collective"
		if t.state == tsBar {
			what = fmt.Sprintf("barrier %d", t.cval[0])
		}
		return w.faultAt(t, t.pc-1, FaultDeadlock, 0,
			fmt.Sprintf("%d of %d threads wait at %s that can never complete", len(b.threads)-b.exited, len(b.threads), what), nil)
	}
	return nil
}

func (w *worker) faultAt(t *thread, pc int32, kind FaultKind, addr uint64, detail string, err error) *Fault {
	f := &Fault{Kind: kind, Kernel: w.g.k.name, Addr: addr, Block: w.blk.ctaid, Thread: t.tid, Detail: detail, Err: err}
	if pc >= 0 && int(pc) < len(t.fn.lines) {
		f.Line = int(t.fn.lines[pc])
	}
	return f
}

var errNoMemory = errors.New("no global memory")
