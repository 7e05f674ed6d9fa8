package interp

import (
	"math/bits"
)

// block is one CTA's state, reused by a worker from block to block.
type block struct {
	k       *Kernel
	l       *Launch
	ctaid   [3]uint32
	linear  uint64
	threads []thread
	shared  []byte
	exited  int

	regArena   []uint64
	localArena []byte
	paramArena []byte

	// tmpl is the entry function's fresh frame with the special registers
	// that are the same for every thread of the block already loaded;
	// tsregs are the ones loaded per thread.
	tmpl   []uint64
	tsregs []sregSlot
	bsregs []sregSlot

	queue []int32 // runnable threads, a ring
	qhead int
	qlen  int

	warps []warp
	bars  [16]barrier
}

type warp struct {
	live    uint32 // lanes that exist and have not exited
	waiting uint32 // lanes blocked at a warp collective
	first   int    // thread index of lane 0
}

type barrier struct {
	arrived  []uint32 // lanes arrived, per warp
	waiting  []int32  // threads blocked (bar.sync, bar.red)
	expected int      // thread count, or -1 for all threads of the CTA
	active   bool
	popc     uint64
	and, or  bool
}

func (b *block) init(k *Kernel, l *Launch) {
	b.k, b.l = k, l
	n := int(l.Block[0] * l.Block[1] * l.Block[2])
	b.threads = make([]thread, n)
	b.queue = make([]int32, n)
	fn := k.entry
	b.regArena = make([]uint64, n*fn.nslots)
	b.localArena = make([]byte, n*fn.local)
	b.paramArena = make([]byte, n*fn.pframe)
	b.shared = make([]byte, k.sharedTotal(l.DynamicShared))
	b.tmpl = append([]uint64(nil), fn.template...)
	for _, s := range fn.sregs {
		switch {
		case s.kind.perThread():
			b.tsregs = append(b.tsregs, s)
		case s.kind.perBlock():
			b.bsregs = append(b.bsregs, s)
		default:
			b.tmpl[s.slot] = b.sregValue(nil, s.kind)
		}
	}
	nw := (n + 31) / 32
	b.warps = make([]warp, nw)
	for i := range b.bars {
		b.bars[i].arrived = make([]uint32, nw)
	}
	for i := range b.threads {
		t := &b.threads[i]
		t.linear = uint32(i)
		x := uint32(i) % l.Block[0]
		y := uint32(i) / l.Block[0] % l.Block[1]
		z := uint32(i) / (l.Block[0] * l.Block[1])
		t.tid = [3]uint32{x, y, z}
	}
}

// start resets the block's state to run block number linear.
func (b *block) start(linear uint64) {
	g := b.l.Grid
	b.linear = linear
	b.ctaid = [3]uint32{uint32(linear % uint64(g[0])), uint32(linear / uint64(g[0]) % uint64(g[1])), uint32(linear / (uint64(g[0]) * uint64(g[1])))}
	clear(b.shared)
	clear(b.localArena)
	b.exited = 0
	n := len(b.threads)
	for w := range b.warps {
		lanes := min(32, n-32*w)
		b.warps[w] = warp{live: uint32(1<<lanes - 1), first: 32 * w}
	}
	for i := range b.bars {
		bar := &b.bars[i]
		clear(bar.arrived)
		bar.waiting = bar.waiting[:0]
		bar.active = false
	}
	fn := b.k.entry
	for _, s := range b.bsregs {
		b.tmpl[s.slot] = b.sregValue(nil, s.kind)
	}
	ns, nl, np := fn.nslots, fn.local, fn.pframe
	for i := range b.threads {
		t := &b.threads[i]
		t.fn = fn
		t.pc = 0
		t.stack = b.regArena[i*ns : (i+1)*ns : (i+1)*ns]
		t.rbase = 0
		t.regs = t.stack
		copy(t.regs, b.tmpl)
		for _, s := range b.tsregs {
			t.regs[s.slot] = b.sregValue(t, s.kind)
		}
		t.frames = t.frames[:0]
		t.local = b.localArena[i*nl : (i+1)*nl : (i+1)*nl]
		t.lbase = 0
		t.pstack = b.paramArena[i*np : (i+1)*np : (i+1)*np]
		t.pbase = 0
		t.icount, t.sleepNs = 0, 0
		t.state = tsReady
		t.cin = nil
		b.queue[i] = int32(i)
	}
	b.qhead, b.qlen = 0, n
}

func (b *block) loadSregs(t *thread, fn *function) {
	for _, s := range fn.sregs {
		t.regs[s.slot] = b.sregValue(t, s.kind)
	}
}

func (b *block) sregValue(t *thread, s sreg) uint64 {
	l := b.l
	var lane uint32
	if s.perThread() {
		lane = t.linear % 32
	}
	switch s {
	case srTidX, srTidY, srTidZ:
		return uint64(t.tid[s-srTidX])
	case srNtidX, srNtidY, srNtidZ:
		return uint64(l.Block[s-srNtidX])
	case srCtaidX, srCtaidY, srCtaidZ:
		return uint64(b.ctaid[s-srCtaidX])
	case srNctaidX, srNctaidY, srNctaidZ:
		return uint64(l.Grid[s-srNctaidX])
	case srLaneid:
		return uint64(lane)
	case srWarpid:
		return uint64(t.linear / 32)
	case srNwarpid:
		return 64
	case srSmid:
		return b.linear % uint64(b.sms())
	case srNsmid:
		return uint64(b.sms())
	case srGridid:
		return 0
	case srLanemaskEq:
		return 1 << lane
	case srLanemaskLe:
		return uint64(uint32(1<<(lane+1) - 1))
	case srLanemaskLt:
		return 1<<lane - 1
	case srLanemaskGe:
		return uint64(^uint32(1<<lane - 1))
	case srLanemaskGt:
		return uint64(^uint32(1<<(lane+1) - 1))
	case srWarpSize:
		return 32
	case srDynSmem:
		return uint64(l.DynamicShared)
	case srTotalSmem:
		return uint64(len(b.shared))
	}
	return 0
}

func (b *block) sms() int {
	if b.l.SMs > 0 {
		return b.l.SMs
	}
	return 1
}

func (b *block) push(i int32) {
	b.queue[(b.qhead+b.qlen)%len(b.queue)] = i
	b.qlen++
}

func (b *block) pop() int32 {
	i := b.queue[b.qhead]
	b.qhead = (b.qhead + 1) % len(b.queue)
	b.qlen--
	return i
}

// release makes a blocked thread runnable.
func (b *block) release(t *thread) {
	t.state = tsReady
	t.cin = nil
	b.push(int32(t.linear))
}

// exit retires a thread and re-examines what it may have been holding up.
func (b *block) exit(t *thread) {
	t.state = tsExited
	b.exited++
	w := &b.warps[t.linear/32]
	w.live &^= 1 << (t.linear % 32)
	for id := range b.bars {
		if b.bars[id].active {
			b.tryBar(id)
		}
	}
	b.retryWarp(w)
}

// --- CTA barriers ---

// arriveBar records a thread's arrival at barrier t.cval[0] (count t.cval[1],
// all threads if ^0) and completes the barrier if it was the last.
func (b *block) arriveBar(t *thread) {
	in := t.cin
	id := int(t.cval[0])
	bar := &b.bars[id]
	if !bar.active {
		bar.active = true
		bar.expected = -1
		if t.cval[1] != ^uint64(0) {
			bar.expected = int(uint32(t.cval[1]))
		}
		bar.popc, bar.and, bar.or = 0, true, false
	}
	lane := t.linear % 32
	bar.arrived[t.linear/32] |= 1 << lane
	p := t.cval[2] != 0
	if p {
		bar.popc++
	}
	bar.and = bar.and && p
	bar.or = bar.or || p
	if in.kind == barArrive {
		t.state = tsReady
		t.cin = nil
		b.push(int32(t.linear))
	} else {
		t.state = tsBar
		bar.waiting = append(bar.waiting, int32(t.linear))
	}
	b.tryBar(id)
}

func (b *block) tryBar(id int) {
	bar := &b.bars[id]
	if bar.expected < 0 {
		for w := range b.warps {
			if b.warps[w].live&^bar.arrived[w] != 0 {
				return
			}
		}
	} else {
		n := 0
		for w := range b.warps {
			a := bar.arrived[w]
			if a != 0 && b.warps[w].live&^a == 0 {
				n += 32
			}
		}
		if n < bar.expected {
			return
		}
	}
	var res uint64
	for _, i := range bar.waiting {
		t := &b.threads[i]
		in := t.cin
		switch in.kind {
		case barRedPopc:
			res = bar.popc
		case barRedAnd:
			res = b2u(bar.and)
		case barRedOr:
			res = b2u(bar.or)
		}
		if in.kind != barSync {
			t.regs[in.d] = res
		}
		b.release(t)
	}
	bar.waiting = bar.waiting[:0]
	clear(bar.arrived)
	bar.active = false
}

// --- warp collectives ---

func (b *block) arriveWarp(t *thread) {
	w := &b.warps[t.linear/32]
	w.waiting |= 1 << (t.linear % 32)
	t.state = tsWarp
	if t.cin.kind != wActivemask {
		b.tryWarp(w, t)
	}
}

// retryWarp re-examines a warp's pending collectives after a lane exited.
func (b *block) retryWarp(w *warp) {
	tried := uint32(0)
	for m := w.waiting; m != 0; m &= m - 1 {
		lane := bits.TrailingZeros32(m)
		if tried&(1<<lane) != 0 {
			continue
		}
		t := &b.threads[w.first+lane]
		if t.state != tsWarp || t.cin.kind == wActivemask {
			continue
		}
		tried |= t.cmask | 1<<lane
		b.tryWarp(w, t)
	}
}

// tryWarp completes t's collective if every live lane of its membermask waits
// at a collective of the same kind and mask.
func (b *block) tryWarp(w *warp, t *thread) {
	lane := t.linear % 32
	group := (t.cmask | 1<<lane) & w.live
	if group&^w.waiting != 0 {
		return
	}
	kind := t.cin.kind
	for m := group; m != 0; m &= m - 1 {
		u := &b.threads[w.first+bits.TrailingZeros32(m)]
		if u.state != tsWarp || u.cin.kind != kind || (u.cmask|1<<(u.linear%32))&w.live != group {
			return
		}
	}
	b.completeWarp(w, group, kind)
}

func (b *block) lane(w *warp, l int) *thread { return &b.threads[w.first+l] }

func (b *block) completeWarp(w *warp, group uint32, kind uint8) {
	switch kind {
	case wShflUp, wShflDown, wShflBfly, wShflIdx:
		// All lanes compute from the values as they arrived, so results are
		// written only after every source has been read.
		var out [32]uint64
		var pv [32]bool
		for m := group; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			t := b.lane(w, l)
			bval := uint32(t.cval[1]) & 31
			cval := uint32(t.cval[2]) & 31
			seg := uint32(t.cval[2]>>8) & 31
			maxLane := uint32(l)&seg | cval&^seg
			minLane := uint32(l) & seg
			var j int32
			var p bool
			switch kind {
			case wShflUp:
				j = int32(l) - int32(bval)
				p = j >= int32(maxLane)
			case wShflDown:
				j = int32(l) + int32(bval)
				p = j <= int32(maxLane)
			case wShflBfly:
				j = int32(uint32(l) ^ bval)
				p = j <= int32(maxLane)
			case wShflIdx:
				j = int32(minLane | bval&^seg)
				p = j <= int32(maxLane)
			}
			if !p {
				j = int32(l)
			}
			// A source lane outside the group is inactive: the value is
			// undefined, and this lane's own value stands in.
			if group&(1<<uint32(j)) == 0 {
				j = int32(l)
			}
			out[l] = b.lane(w, int(j)).cval[0]
			pv[l] = p
		}
		for m := group; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			t := b.lane(w, l)
			t.regs[t.cin.d] = uint64(uint32(out[l]))
			if t.cin.d2 >= 0 {
				t.regs[t.cin.d2] = b2u(pv[l])
			}
		}
	case wVoteAll, wVoteAny, wVoteUni, wVoteBallot:
		var ballot uint32
		for m := group; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			if b.lane(w, l).cval[0] != 0 {
				ballot |= 1 << l
			}
		}
		var res uint64
		switch kind {
		case wVoteAll:
			res = b2u(ballot == group)
		case wVoteAny:
			res = b2u(ballot != 0)
		case wVoteUni:
			res = b2u(ballot == group || ballot == 0)
		default:
			res = uint64(ballot)
		}
		b.setAll(w, group, res)
	case wMatchAny32, wMatchAny64, wMatchAll32, wMatchAll64:
		mask := uint64(0xffffffff)
		if kind == wMatchAny64 || kind == wMatchAll64 {
			mask = ^uint64(0)
		}
		all := true
		first := b.lane(w, bits.TrailingZeros32(group)).cval[0] & mask
		for m := group; m != 0; m &= m - 1 {
			if b.lane(w, bits.TrailingZeros32(m)).cval[0]&mask != first {
				all = false
			}
		}
		for m := group; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			t := b.lane(w, l)
			v := t.cval[0] & mask
			var d uint64
			if kind == wMatchAny32 || kind == wMatchAny64 {
				for n := group; n != 0; n &= n - 1 {
					if b.lane(w, bits.TrailingZeros32(n)).cval[0]&mask == v {
						d |= 1 << bits.TrailingZeros32(n)
					}
				}
			} else if all {
				d = uint64(group)
			}
			t.regs[t.cin.d] = d
			if t.cin.d2 >= 0 {
				t.regs[t.cin.d2] = b2u(all)
			}
		}
	case wReduxAdd, wReduxMinU, wReduxMaxU, wReduxMinS, wReduxMaxS, wReduxAnd, wReduxOr, wReduxXor:
		var acc uint32
		firstLane := true
		for m := group; m != 0; m &= m - 1 {
			v := uint32(b.lane(w, bits.TrailingZeros32(m)).cval[0])
			if firstLane {
				acc, firstLane = v, false
				continue
			}
			switch kind {
			case wReduxAdd:
				acc += v
			case wReduxMinU:
				acc = min(acc, v)
			case wReduxMaxU:
				acc = max(acc, v)
			case wReduxMinS:
				acc = uint32(min(int32(acc), int32(v)))
			case wReduxMaxS:
				acc = uint32(max(int32(acc), int32(v)))
			case wReduxAnd:
				acc &= v
			case wReduxOr:
				acc |= v
			case wReduxXor:
				acc ^= v
			}
		}
		b.setAll(w, group, uint64(acc))
	case wSyncwarp:
	}
	for m := group; m != 0; m &= m - 1 {
		b.release(b.lane(w, bits.TrailingZeros32(m)))
	}
	w.waiting &^= group
}

// setAll writes res to the destination of every lane of group.
func (b *block) setAll(w *warp, group uint32, res uint64) {
	for m := group; m != 0; m &= m - 1 {
		t := b.lane(w, bits.TrailingZeros32(m))
		t.regs[t.cin.d] = res
	}
}

// resolveActivemask runs when no thread is runnable: every lane waiting at an
// activemask learns which lanes wait at the same instruction, the lanes that
// are converged there. It reports whether any thread was released.
func (b *block) resolveActivemask() bool {
	released := false
	for wi := range b.warps {
		w := &b.warps[wi]
		for m := w.waiting; m != 0; m &= m - 1 {
			t := b.lane(w, bits.TrailingZeros32(m))
			if t.state != tsWarp || t.cin.kind != wActivemask {
				continue
			}
			var group uint32
			for n := w.waiting; n != 0; n &= n - 1 {
				l := bits.TrailingZeros32(n)
				u := b.lane(w, l)
				if u.state == tsWarp && u.cin == t.cin {
					group |= 1 << l
				}
			}
			b.setAll(w, group, uint64(group))
			for n := group; n != 0; n &= n - 1 {
				b.release(b.lane(w, bits.TrailingZeros32(n)))
			}
			w.waiting &^= group
			released = true
		}
	}
	return released
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
