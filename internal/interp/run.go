package interp

import (
	"fmt"
)

// run executes thread t until it exits, blocks at a collective, faults or has
// run budget instructions.
func (w *worker) run(t *thread) status {
	code := t.fn.code
	r := t.regs
	pc := t.pc
	n := 0
	for {
		if n >= budget {
			t.pc = pc
			t.icount += uint64(n)
			w.pending += uint64(n)
			w.total += uint64(n)
			return stBudget
		}
		in := &code[pc]
		pc++
		n++
		if uint8(r[in.guard]) == in.gneg {
			continue
		}
		switch in.op {
		case opALU:
			in.fn(r, in)
		case opMov:
			r[in.d] = r[in.a]
		case opAddI32:
			r[in.d] = uint64(uint32(r[in.a]) + uint32(r[in.b]))
		case opAddI64:
			r[in.d] = r[in.a] + r[in.b]
		case opBra:
			pc = int32(in.imm)
		case opLdParam:
			off := r[in.a] + in.imm
			sz := uint64(in.size) * uint64(in.count)
			if off+sz > uint64(len(w.params)) || off+sz < off {
				return w.memFault(t, pc, n, FaultIllegalAddress, off, "parameter space")
			}
			loadElems(r, in, w.params[off:])
		case opLdFrame:
			loadElems(r, in, t.pstack[t.pbase+int(in.imm):])
		case opStFrame:
			storeElems(r, in, t.pstack[t.pbase+int(in.imm):])
		case opLdGlobal, opStGlobal:
			if st := w.global(t, in, r, r[in.a]+in.imm, pc, n); st != stBudget {
				return st
			}
		case opLdShared, opStShared:
			if st := w.shared(t, in, r, r[in.a]+in.imm, pc, n); st != stBudget {
				return st
			}
		case opLdLocal, opStLocal:
			if st := w.localMem(t, in, r, r[in.a]+in.imm, pc, n); st != stBudget {
				return st
			}
		case opLdGeneric, opStGeneric:
			addr := r[in.a] + in.imm
			var st status
			switch {
			case addr-SharedWindow < WindowSize:
				st = w.shared(t, in, r, addr-SharedWindow, pc, n)
			case addr-LocalWindow < WindowSize:
				st = w.localMem(t, in, r, addr-LocalWindow, pc, n)
			default:
				st = w.global(t, in, r, addr, pc, n)
			}
			if st != stBudget {
				return st
			}
		case opAtom:
			if st := w.atomic(t, in, r, pc, n); st != stBudget {
				return st
			}
		case opLocalAddr:
			r[in.d] = uint64(t.lbase) + in.imm
		case opSreg:
			r[in.d] = w.dynSreg(t, sreg(in.kind), t.icount+uint64(n))
		case opNanosleep:
			t.sleepNs += uint64(uint32(r[in.a]))
		case opCall:
			t.pc = pc
			if !w.call(t, in.call) {
				return w.memFault(t, pc, n, FaultStackOverflow, 0, fmt.Sprintf("calling %s", in.call.callee.name))
			}
			code, r, pc = t.fn.code, t.regs, t.pc
		case opRet:
			if len(t.frames) == 0 {
				return w.exitThread(t, n)
			}
			w.ret(t)
			code, r, pc = t.fn.code, t.regs, t.pc
		case opExit:
			return w.exitThread(t, n)
		case opTrap:
			detail := ""
			if in.call != nil {
				detail = w.assertion(t, in.call)
			}
			return w.memFault(t, pc, n, FaultTrap, 0, detail)
		case opCpAsync:
			if st := w.cpAsync(t, in, r, pc, n); st != stBudget {
				return st
			}
		case opPrintf:
			w.printf(t, in.call)
		case opBar:
			t.cin = in
			t.cval[0] = r[in.a] & 15
			t.cval[1] = ^uint64(0)
			if in.b >= 0 {
				t.cval[1] = uint64(uint32(r[in.b]))
			}
			t.cval[2] = 0
			if in.c >= 0 {
				t.cval[2] = r[in.c] ^ uint64(in.flag)
			}
			t.pc = pc
			t.icount += uint64(n)
			w.pending += uint64(n)
			w.total += uint64(n)
			return stBar
		case opWarp:
			t.cin = in
			t.cval[0] = r[in.a]
			if in.flag != 0 { // negated predicate source
				t.cval[0] ^= 1
			}
			t.cval[1] = r[in.b]
			t.cval[2] = r[in.c]
			t.cmask = uint32(r[in.e])
			t.pc = pc
			t.icount += uint64(n)
			w.pending += uint64(n)
			w.total += uint64(n)
			return stWarp
		}
	}
}

func (w *worker) exitThread(t *thread, n int) status {
	t.icount += uint64(n)
	w.pending += uint64(n)
	w.total += uint64(n)
	return stExit
}

// memFault records a fault at the instruction before pc.
func (w *worker) memFault(t *thread, pc int32, n int, kind FaultKind, addr uint64, detail string) status {
	return w.memFaultErr(t, pc, n, kind, addr, detail, nil)
}

func (w *worker) memFaultErr(t *thread, pc int32, n int, kind FaultKind, addr uint64, detail string, err error) status {
	t.pc = pc - 1
	t.icount += uint64(n)
	w.pending += uint64(n)
	w.total += uint64(n)
	w.fault = w.faultAt(t, pc-1, kind, addr, detail, err)
	return stFault
}

// global performs a global load or store; stBudget means success.
func (w *worker) global(t *thread, in *inst, r []uint64, addr uint64, pc int32, n int) status {
	size := int(in.size) * int(in.count)
	if addr&uint64(size-1) != 0 {
		return w.memFault(t, pc, n, FaultMisaligned, addr, fmt.Sprintf("%d-byte global access", size))
	}
	store := in.op == opStGlobal || in.op == opStGeneric
	if w.mem == nil {
		return w.memFaultErr(t, pc, n, FaultIllegalAddress, addr, "global access", errNoMemory)
	}
	b, err := w.mem.Slice(addr, size, store)
	if err != nil || len(b) < size {
		return w.memFaultErr(t, pc, n, FaultIllegalAddress, addr, fmt.Sprintf("%d-byte global access", size), err)
	}
	if raceEnabled {
		s := stripe(addr)
		s.Lock()
		defer s.Unlock()
	}
	if store {
		storeElems(r, in, b)
		w.written += uint64(size)
	} else {
		loadElems(r, in, b)
		w.read += uint64(size)
	}
	return stBudget
}

func (w *worker) shared(t *thread, in *inst, r []uint64, addr uint64, pc int32, n int) status {
	size := uint64(in.size) * uint64(in.count)
	if addr&(size-1) != 0 {
		return w.memFault(t, pc, n, FaultMisaligned, addr, fmt.Sprintf("%d-byte shared access", size))
	}
	sh := w.blk.shared
	if addr >= uint64(len(sh)) || addr+size > uint64(len(sh)) {
		return w.memFault(t, pc, n, FaultIllegalAddress, addr, fmt.Sprintf("%d-byte shared access beyond the block's %d bytes", size, len(sh)))
	}
	if in.op == opStShared || in.op == opStGeneric {
		storeElems(r, in, sh[addr:])
	} else {
		loadElems(r, in, sh[addr:])
	}
	return stBudget
}

func (w *worker) localMem(t *thread, in *inst, r []uint64, addr uint64, pc int32, n int) status {
	size := uint64(in.size) * uint64(in.count)
	if addr&(size-1) != 0 {
		return w.memFault(t, pc, n, FaultMisaligned, addr, fmt.Sprintf("%d-byte local access", size))
	}
	if addr >= uint64(len(t.local)) || addr+size > uint64(len(t.local)) {
		return w.memFault(t, pc, n, FaultIllegalAddress, addr, fmt.Sprintf("%d-byte local access beyond the thread's %d bytes", size, len(t.local)))
	}
	if in.op == opStLocal || in.op == opStGeneric {
		storeElems(r, in, t.local[addr:])
	} else {
		loadElems(r, in, t.local[addr:])
	}
	return stBudget
}

// atomic performs atom/red: r[d] = old; mem = in.atom(old, r[b], r[c]).
func (w *worker) atomic(t *thread, in *inst, r []uint64, pc int32, n int) status {
	addr := r[in.a] + in.imm
	size := uint64(in.size)
	if addr&(size-1) != 0 {
		return w.memFault(t, pc, n, FaultMisaligned, addr, fmt.Sprintf("%d-byte atomic", size))
	}
	space := in.space
	if space == spGeneric {
		switch {
		case addr-SharedWindow < WindowSize:
			addr -= SharedWindow
			space = spShared
		case addr-LocalWindow < WindowSize:
			// Atomics on local memory are undefined in PTX; the thread owns
			// it, so a plain read-modify-write is exact.
			addr -= LocalWindow
			if addr >= uint64(len(t.local)) || addr+size > uint64(len(t.local)) {
				return w.memFault(t, pc, n, FaultIllegalAddress, addr+LocalWindow, "atomic beyond local memory")
			}
			w.rmw(t.local[addr:], in, r)
			return stBudget
		default:
			space = spGlobal
		}
	}
	if space == spShared {
		sh := w.blk.shared
		if addr >= uint64(len(sh)) || addr+size > uint64(len(sh)) {
			return w.memFault(t, pc, n, FaultIllegalAddress, addr, "shared atomic beyond the block's shared memory")
		}
		w.rmw(sh[addr:], in, r)
		return stBudget
	}
	if w.mem == nil {
		return w.memFaultErr(t, pc, n, FaultIllegalAddress, addr, "global atomic", errNoMemory)
	}
	b, err := w.mem.Slice(addr, int(size), true)
	if err != nil || len(b) < int(size) {
		return w.memFaultErr(t, pc, n, FaultIllegalAddress, addr, fmt.Sprintf("%d-byte global atomic", size), err)
	}
	s := stripe(addr)
	s.Lock()
	w.rmw(b, in, r)
	s.Unlock()
	w.read += size
	w.written += size
	return stBudget
}

// cpAsync copies size bytes from global memory to shared memory, only the
// first src-size of them read (the rest zero), none when ignore-src is set.
func (w *worker) cpAsync(t *thread, in *inst, r []uint64, pc int32, n int) status {
	dst := r[in.a] + in.imm
	src := r[in.b] + r[in.e]
	size := uint64(in.size)
	srcSize := min(uint64(uint32(r[in.c])), size)
	if r[in.d] != 0 {
		srcSize = 0
	}
	sh := w.blk.shared
	switch {
	case dst&(size-1) != 0:
		return w.memFault(t, pc, n, FaultMisaligned, dst, fmt.Sprintf("cp.async of %d bytes to shared memory", size))
	case src&(size-1) != 0:
		return w.memFault(t, pc, n, FaultMisaligned, src, fmt.Sprintf("cp.async of %d bytes from global memory", size))
	case dst >= uint64(len(sh)) || dst+size > uint64(len(sh)):
		return w.memFault(t, pc, n, FaultIllegalAddress, dst, "cp.async beyond the block's shared memory")
	}
	if w.mem == nil && srcSize > 0 {
		return w.memFaultErr(t, pc, n, FaultIllegalAddress, src, "cp.async from global memory", errNoMemory)
	}
	out := sh[dst : dst+size]
	clear(out)
	if srcSize == size {
		b, err := w.mem.Slice(src, int(size), false)
		if err != nil || len(b) < int(size) {
			return w.memFaultErr(t, pc, n, FaultIllegalAddress, src, "cp.async from global memory", err)
		}
		copy(out, b)
	} else {
		for i := uint64(0); i < srcSize; i++ {
			b, err := w.mem.Slice(src+i, 1, false)
			if err != nil || len(b) < 1 {
				return w.memFaultErr(t, pc, n, FaultIllegalAddress, src+i, "cp.async from global memory", err)
			}
			out[i] = b[0]
		}
	}
	w.read += srcSize
	return stBudget
}

func (w *worker) rmw(b []byte, in *inst, r []uint64) {
	old := load(b, in.size)
	store(b, in.size, in.atom(old, r[in.b], r[in.c]))
	if in.d >= 0 {
		r[in.d] = old
	}
}

// assertion describes a failed device-side assert from __assertfail's
// arguments: message, file, line, function.
func (w *worker) assertion(t *thread, site *callSite) string {
	arg := func(i int) uint64 {
		a := site.args[i]
		return load(t.pstack[t.pbase+a.off:], uint8(min(a.size, 8)))
	}
	return fmt.Sprintf("assertion %q failed at %s:%d in %s", w.cString(arg(0)), w.cString(arg(1)), uint32(arg(2)), w.cString(arg(3)))
}

// cString reads a NUL-terminated string (at most 200 bytes) at a generic
// address, for fault messages.
func (w *worker) cString(addr uint64) string {
	var b []byte
	for len(b) < 200 {
		var c byte
		switch {
		case addr-SharedWindow < WindowSize && addr-SharedWindow < uint64(len(w.blk.shared)):
			c = w.blk.shared[addr-SharedWindow]
		case w.mem != nil:
			p, err := w.mem.Slice(addr, 1, false)
			if err != nil || len(p) < 1 {
				return string(b) + "…"
			}
			c = p[0]
		default:
			return string(b)
		}
		if c == 0 {
			break
		}
		b = append(b, c)
		addr++
	}
	return string(b)
}

func (w *worker) dynSreg(t *thread, s sreg, icount uint64) uint64 {
	ns := w.g.l.StartNs + uint64(w.g.l.NsPerInstruction*float64(icount)) + t.sleepNs
	switch s {
	case srClock:
		return uint64(uint32(icount + t.sleepNs))
	case srClock64:
		return icount + t.sleepNs
	case srGlobaltimer:
		return ns
	case srGlobaltimerLo:
		return uint64(uint32(ns))
	case srGlobaltimerHi:
		return ns >> 32
	}
	return 0
}

// call enters a device function. It reports false when the call stack or
// local memory would overflow.
func (w *worker) call(t *thread, site *callSite) bool {
	if len(t.frames) >= MaxCallDepth {
		return false
	}
	caller, callee := t.fn, site.callee
	rbase := t.rbase + caller.nslots
	pbase := alignUp(t.pbase+caller.pframe, 16)
	lbase := alignUp(t.lbase+caller.local, max(callee.lalign, 1))
	if lbase+callee.local > MaxLocalPerThread {
		return false
	}
	t.frames = append(t.frames, frame{fn: caller, pc: t.pc, rbase: t.rbase, pbase: t.pbase, lbase: t.lbase, site: site})
	t.stack = grow(t.stack, rbase+callee.nslots)
	t.pstack = grow(t.pstack, pbase+callee.pframe)
	t.local = grow(t.local, lbase+callee.local)
	clear(t.local[lbase : lbase+callee.local])
	clear(t.pstack[pbase : pbase+callee.pframe])
	for i, a := range site.args {
		f := callee.formals[i]
		copy(t.pstack[pbase+f.off:pbase+f.off+min(f.size, a.size)], t.pstack[t.pbase+a.off:])
	}
	t.fn = callee
	t.rbase, t.pbase, t.lbase = rbase, pbase, lbase
	t.regs = t.stack[rbase : rbase+callee.nslots]
	copy(t.regs, callee.template)
	w.blk.loadSregs(t, callee)
	t.pc = 0
	return true
}

// ret returns from a device function, copying its return values into the
// caller's frame.
func (w *worker) ret(t *thread) {
	f := t.frames[len(t.frames)-1]
	t.frames = t.frames[:len(t.frames)-1]
	callee := t.fn
	for i, rv := range f.site.rets {
		src := callee.returns[i]
		copy(t.pstack[f.pbase+rv.off:f.pbase+rv.off+min(rv.size, src.size)], t.pstack[t.pbase+src.off:])
	}
	t.fn = f.fn
	t.rbase, t.pbase, t.lbase = f.rbase, f.pbase, f.lbase
	t.regs = t.stack[t.rbase : t.rbase+f.fn.nslots]
	t.pc = f.pc
}

// grow returns s with length at least n, reallocating when its capacity is
// short.
func grow[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	if n <= cap(s) {
		return s[:n]
	}
	ns := make([]T, n, 2*n)
	copy(ns, s)
	return ns
}
