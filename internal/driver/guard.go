package driver

// The PTX memory guard's side of the driver: trust tiers at program load,
// guarded programs' parameters and relocated globals, fault records, and
// revocation on a violation. See internal/guard for the pass itself.
//
// Fault-record protocol. Each guarded program gets a 32-byte guard.Record in
// host memory the device can write (backend.MappedHostAllocator), whose
// device address the driver writes into the program's guard parameters.
// Guarded code adds to it with atomics when it suppresses an access. The
// driver reads it, without a copy, after each of the program's launches
// completes (the scheduler's Done) and at every synchronizing call (before
// takeDeferred answers). On a backend without mapped host memory the record
// is device memory the driver reads with a synchronous copy, at synchronizing
// calls only. A nonzero record revokes the session: the synchronizing call
// returns GuardViolation, and so does every later request; the audit log
// gets a violation record and SessionStat.Violations counts it.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/fatbin"
	"github.com/gpuos/gpuos/internal/guard"
	"github.com/gpuos/gpuos/internal/ledger"
	"github.com/gpuos/gpuos/internal/mangle"
	"github.com/gpuos/gpuos/internal/mem"
	"github.com/gpuos/gpuos/internal/ptx"
	"github.com/gpuos/gpuos/internal/wire"
)

// Errors of the trust tiers.
var (
	// ErrSASSRefused: a module with machine code only (a cubin, or a fatbin
	// without PTX for the device), which the guard cannot rewrite.
	ErrSASSRefused = v1.Errorf(v1.CodeUnsupported, "module has no PTX to guard")
	// ErrIsolatedTier: the tenant's trust tier is isolated, which needs a
	// driver process of its own (not implemented yet).
	ErrIsolatedTier = v1.Errorf(v1.CodeUnsupported, "isolated trust tier is not implemented yet")
	// ErrTrustedArgument: a launch of an allowlisted SASS module passed a
	// pointer-sized argument outside the session's memory.
	ErrTrustedArgument = v1.Errorf(v1.CodeInvalidArgument, "trusted module argument outside the session's memory")
)

// driverGuard is the driver-wide state of the guard.
type driverGuard struct {
	mu     sync.Mutex
	stream backend.Stream // private: writes guard parameters and reads device fault records
	faults []*faultPage
	free   []faultSlot
}

// sessionGuard is a session's guard state.
type sessionGuard struct {
	mu       sync.Mutex
	programs map[*programObj]struct{} // guarded programs alive
	// check serialises reading fault records and revoking, so a
	// synchronizing call never passes a violation that a completion is
	// reporting at the same moment.
	check     sync.Mutex
	violation atomic.Pointer[error] // set once: the session is revoked
}

// guardedProgram is a program loaded through the guard (or, trusted, an
// allowlisted SASS module).
type guardedProgram struct {
	trusted bool // allowlisted SASS: launch arguments are checked instead
	// pointers, for allowlisted PTX, says per kernel which parameters may be
	// addresses (guard.PointerParams): only those are checked at launch.
	pointers map[string][]bool
	// mangled, for allowlisted SASS, caches per kernel name which parameters
	// its mangled name leaves able to hold an address (mangledPointers).
	mangled sync.Map      // string → []bool
	res     *guard.Result // nil when trusted
	params  backend.DevicePtr
	slot    faultSlot
	globals *mem.Allocation // relocated .global variables, in the window
	gbase   uint64

	mu       sync.Mutex
	span     atomic.Uint64 // the window span last written into the parameters
	reported atomic.Bool
}

// ---- trust tiers at load -----------------------------------------------------

// admitImage decides how a module may run under the session's trust tier and
// returns the image to load: guarded PTX text, an allowlisted SASS image as
// is, or a refusal.
func (s *Session) admitImage(image []byte) (load []byte, gp *guardedProgram, kernels []string, err error) {
	if s.params.Trust == v1.TrustIsolated {
		return nil, nil, nil, fmt.Errorf("%w: tenant %s runs unguarded code only in a driver process of its own; use trust: guarded (PTX) or trusted (allowlisted SASS)", ErrIsolatedTier, s.tenant.name)
	}
	if s.allowlisted(image) {
		// Operator-vetted code, PTX or SASS, runs as it is: its pointer
		// arguments are checked at each launch instead.
		gp := &guardedProgram{trusted: true}
		if isPTX(image) {
			if m, err := ptx.Parse(bytes.TrimRight(image, "\x00")); err == nil {
				gp.pointers = guard.PointerParams(m)
			}
		}
		return image, gp, nil, nil
	}
	text, sass, err := s.ptxOf(image)
	if err != nil {
		return nil, nil, nil, err
	}
	if text == nil {
		return s.admitSASS(sass)
	}
	m, err := ptx.Parse(text)
	if err != nil {
		return nil, nil, nil, err
	}
	res, err := guard.Guard(m, guard.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	return m.Bytes(), &guardedProgram{res: res}, res.Kernels, nil
}

// ptxOf returns the PTX text of an image (PTX, or the best PTX of a fatbin
// for the device), or nil and the image when it holds machine code only.
func (s *Session) ptxOf(image []byte) (text, sass []byte, err error) {
	if isPTX(image) {
		return bytes.TrimRight(image, "\x00"), nil, nil
	}
	if !fatbin.IsFatbin(image) {
		return nil, image, nil // a cubin, or something the backend will refuse
	}
	entries, err := fatbin.Parse(image)
	if err != nil {
		return nil, nil, err
	}
	pe, _ := fatbin.Select(entries, s.d.info.ComputeMajor, s.d.info.ComputeMinor)
	if pe == nil {
		return nil, image, nil
	}
	p, err := pe.Payload()
	if err != nil {
		return nil, nil, err
	}
	return bytes.TrimRight(p, "\x00"), nil, nil
}

// allowlisted reports whether the session's tenant is trusted and the image's
// SHA-256 is on the operator's allowlist.
func (s *Session) allowlisted(image []byte) bool {
	if s.params.Trust != v1.TrustTrusted {
		return false
	}
	sum := sha256.Sum256(image)
	for _, h := range s.params.TrustedModules {
		if h == sum {
			return true
		}
	}
	return false
}

// admitSASS lets a machine-code module through only for a trusted tenant and
// only if its SHA-256 is on the operator's allowlist.
func (s *Session) admitSASS(image []byte) ([]byte, *guardedProgram, []string, error) {
	sum := sha256.Sum256(image)
	if s.params.Trust == v1.TrustTrusted {
		for _, h := range s.params.TrustedModules {
			if h == sum {
				return image, &guardedProgram{trusted: true}, nil, nil
			}
		}
	}
	hexSum := hex.EncodeToString(sum[:])
	s.d.audit(audit.Event{Kind: audit.KindDeny, Tenant: s.tenant.name, Session: s.id, PID: s.params.PID,
		Detail: map[string]any{"request": "LoadProgram", "sha256": hexSum, "trust": s.params.Trust.String()}}.WithError(ErrSASSRefused))
	return nil, nil, nil, fmt.Errorf("%w: it holds machine code (SASS) only, sha256 %s; tenant %s has trust tier %s. "+
		"Ship PTX (nvcc -gencode arch=compute_XX,code=compute_XX, or a fatbin that embeds PTX) so it can be guarded; "+
		"or have the operator add the hash to trusted_modules and give the tenant trust: trusted",
		ErrSASSRefused, hexSum, s.tenant.name, s.params.Trust)
}

// ---- binding a loaded program ------------------------------------------------

// bindGuard finishes loading a guarded program: its fault record, its
// relocated globals in the window, its parameters.
func (s *Session) bindGuard(p *programObj) error {
	gp := p.guard
	if gp == nil || gp.trusted {
		return nil
	}
	ptr, size, err := p.mod.Global(guard.ParamsVar)
	if err != nil || size < guard.ParamsSize {
		return fmt.Errorf("find %s in the guarded module: %w", guard.ParamsVar, errors.Join(err, backend.ErrNotFound))
	}
	gp.params = ptr
	if gp.slot, err = s.faultSlot(); err != nil {
		return err
	}
	if l := gp.res.Globals; l != nil {
		if err := s.placeGlobals(p, l); err != nil {
			s.unbindGuard(p)
			return err
		}
	}
	if err := s.writeParams(gp); err != nil {
		s.unbindGuard(p)
		return err
	}
	s.guard.mu.Lock()
	if s.guard.programs == nil {
		s.guard.programs = map[*programObj]struct{}{}
	}
	s.guard.programs[p] = struct{}{}
	s.guard.mu.Unlock()
	return nil
}

// placeGlobals allocates the relocated .global variables in the session's
// window (charged like a buffer) and writes their initial contents.
func (s *Session) placeGlobals(p *programObj, l *guard.Layout) error {
	gp := p.guard
	n := l.Size
	if l.Align > 256 {
		n += l.Align
	}
	a, err := s.window.Alloc(n, 0)
	if err != nil {
		return fmt.Errorf("place the module's %d bytes of .global variables: %w", l.Size, err)
	}
	if err := s.ledger.Charge(ledger.DeviceBytes, a.Size()); err != nil {
		a.Free()
		return err
	}
	gp.globals = a
	gp.gbase = (uint64(a.Ptr()) + l.Align - 1) &^ (l.Align - 1)
	resolve := func(name string) (uint64, bool) {
		ptr, _, err := p.mod.Global(name)
		return uint64(ptr), err == nil
	}
	data, err := l.Bytes(gp.gbase, resolve)
	if err != nil {
		return err
	}
	if err := s.d.guard.write(s.d, backend.DevicePtr(gp.gbase), data); err != nil {
		return err
	}
	for _, cp := range gp.res.ConstPatches {
		v, _ := l.Var(cp.Symbol)
		cptr, csize, err := p.mod.Global(cp.Var)
		if err != nil || cp.Offset+8 > csize {
			return fmt.Errorf("patch constant %s: %w", cp.Var, errors.Join(err, backend.ErrNotFound))
		}
		b := binary.LittleEndian.AppendUint64(nil, gp.gbase+v.Offset+uint64(cp.Addend))
		if err := s.d.guard.write(s.d, cptr+backend.DevicePtr(cp.Offset), b); err != nil {
			return err
		}
	}
	return nil
}

// writeParams writes the window's current bounds, the fault record's address
// and the globals' base into the program's guard parameters.
func (s *Session) writeParams(gp *guardedProgram) error {
	gp.mu.Lock()
	defer gp.mu.Unlock()
	lo, hi := s.window.GuardRange()
	pr := guard.Params{Lo: uint64(lo), Span: uint64(hi - lo), Fault: gp.slot.addr(), Globals: gp.gbase,
		SharedReserve: s.d.sharedReserve()}
	if err := pr.Validate(); err != nil {
		return fmt.Errorf("guard parameters of window %#x..%#x: %w", uint64(lo), uint64(hi), err)
	}
	if gp.span.Load() == pr.Span {
		return nil
	}
	if err := s.d.guard.write(s.d, gp.params, pr.Bytes()); err != nil {
		return err
	}
	gp.span.Store(pr.Span)
	return nil
}

// sharedReserve is how far above %total_smem_size a block may address shared
// memory: the device's reserved shared memory per block (real GPUs place it
// below the user's shared memory); the sim has none.
func (d *Driver) sharedReserve() uint32 {
	if d.opts.Backend.Name() == "sim" {
		return 0
	}
	if a := d.info.Attributes; int(cuda.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK) < len(a) {
		return uint32(max(a[cuda.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK], 0))
	}
	return 0
}

// unbindGuard releases a guarded program's fault record and globals.
func (s *Session) unbindGuard(p *programObj) {
	gp := p.guard
	if gp == nil || gp.trusted {
		return
	}
	// A violation recorded by the program's last launches still counts.
	s.checkProgram(p, true)
	s.guard.mu.Lock()
	delete(s.guard.programs, p)
	s.guard.mu.Unlock()
	if gp.globals != nil {
		size := gp.globals.Size()
		if err := gp.globals.Free(); err != nil && !errors.Is(err, mem.ErrRevoked) && !errors.Is(err, mem.ErrWindowClosed) {
			s.d.log.Warn("free relocated globals", "session", s.id, "err", err)
		}
		s.ledger.Refund(ledger.DeviceBytes, size)
		gp.globals = nil
	}
	// A launch's Done may still be reading the slot (checkProgram, under
	// check): take it away under check, so a late reader finds none, before
	// the slot goes back for another program to use.
	s.guard.check.Lock()
	slot := gp.slot
	gp.slot = faultSlot{}
	s.guard.check.Unlock()
	if slot.page != nil {
		s.d.guard.release(s.d, slot)
	}
}

// guardGlobal answers cuModuleGetGlobal for a relocated variable.
func (p *programObj) guardGlobal(name string) (uint64, uint64, bool) {
	if p.guard == nil || p.guard.res == nil {
		return 0, 0, false
	}
	v, ok := p.guard.res.Globals.Var(name)
	if !ok {
		return 0, 0, false
	}
	return p.guard.gbase + v.Offset, v.Size, true
}

// ---- launches ----------------------------------------------------------------

// guardLaunch prepares a launch: a guarded program's parameters follow the
// window's growth; a trusted module's pointer-sized arguments must point into
// the session's memory.
func (s *Session) guardLaunch(k *kernelObj, params []byte) error {
	if k.prog == nil || k.prog.guard == nil {
		return nil
	}
	gp := k.prog.guard
	if gp.trusted {
		pointers, ok := gp.pointers[k.name]
		if !ok {
			pointers = gp.namePointers(k)
		}
		return s.checkTrustedArgs(k, params, pointers)
	}
	lo, hi := s.window.GuardRange()
	if gp.span.Load() != uint64(hi-lo) {
		return s.writeParams(gp)
	}
	return nil
}

// checkTrustedArgs: every 8-byte argument that may be an address is 0, or
// inside the session's window, or inside a module global the session looked
// up. For allowlisted PTX, pointers says which parameters may be addresses; for
// SASS it is what the kernel's mangled name says (mangledPointers), and nil
// (every 8-byte argument is checked) where there is none to go by, so an
// 8-byte scalar (a size_t, a seed) that is neither is refused too: that is
// the price of checking machine code the guard cannot read.
func (s *Session) checkTrustedArgs(k *kernelObj, params []byte, pointers []bool) error {
	lo, hi := s.window.GuardRange()
	floor := addressFloor()
	i, v, ok := outsideArg(params, k.fn.Params(), pointers, floor, uint64(lo), uint64(hi), func(a uint64) bool { return s.inGlobal(a, 1) })
	if ok {
		return nil
	}
	prm := k.fn.Params()[i]
	return fmt.Errorf("%w: kernel %s argument %d (bytes %d..%d) is %#x, not inside the session's window %#x..%#x "+
		"(an 8-byte argument from %#x up to %#x could be an address and is checked like a pointer)",
		ErrTrustedArgument, k.name, i, prm.Offset, prm.Offset+8, v, uint64(lo), uint64(hi), floor, uint64(noAddressFrom))
}

// namePointers returns mangledPointers for a kernel of an allowlisted SASS
// module, worked out once per kernel name.
func (gp *guardedProgram) namePointers(k *kernelObj) []bool {
	if v, ok := gp.mangled.Load(k.name); ok {
		return v.([]bool)
	}
	ptr := mangledPointers(k.name, len(k.fn.Params()))
	gp.mangled.Store(k.name, ptr)
	return ptr
}

// mangledPointers says which of a kernel's n parameters may hold an address,
// from what its Itanium-mangled name says of their types; nil (check them
// all) for an extern "C" name, one the mangle package cannot read with
// certainty, or one whose parameter count is not the kernel's.
//
// Only floating-point types and std::nullptr_t are taken for no address.
// Builtin integers stay checked, because code passes addresses in them:
// CuPy's own cuRAND kernels do, init_curand(intptr_t state, uint64_t seed,
// ssize_t size) and execute_dist(intptr_t state, intptr_t out, …) write
// through their first integers, so leaving integers unchecked would let a
// tenant have an allowlisted kernel write into another tenant's memory.
// Pointers, references, classes and structs by value (which may hold
// pointers: curandStateXORWOW, CUB's and CUTLASS's parameter structs),
// template parameters and substitutions stay checked too.
func mangledPointers(name string, n int) []bool {
	sig, err := mangle.Parse(name)
	if err != nil {
		return nil
	}
	kinds, ok := sig.Layout(n)
	if !ok {
		return nil
	}
	ptr := make([]bool, n)
	for i, k := range kinds {
		ptr[i] = k != mangle.Floating && k != mangle.Null
	}
	return ptr
}

// An 8-byte argument is checked only where it could be an address. Below the
// lowest address mapped in the daemon's process (read from /proc/self/maps
// when a trusted argument is first checked, after the driver is up; never
// taken above 4 MiB, where a non-PIE daemon's text starts, nor below 64 KiB,
// the default of Linux's vm.mmap_min_addr) nothing lies, neither host memory
// nor device memory, which shares the process's address space; from
// noAddressFrom (2^57: beyond the user address space of x86-64 with 5-level
// paging and of arm64, and beyond NVIDIA GPUs' virtual addresses) nothing
// can. A value there names no memory a kernel could read or write, and
// machine code's 8-byte scalars are mostly there: counts, offsets and seeds
// (cuRAND's), negative numbers, doubles, pairs whose upper word is a float
// (CUB's ArgMax initial value). So they pass; a scalar between the two bounds
// is still taken for a pointer.
const (
	leastAddressFloor = 64 << 10
	mostAddressFloor  = 4 << 20
	noAddressFrom     = 1 << 57
)

// addressFloor is the lowest value taken for an address, worked out once.
var addressFloor = sync.OnceValue(func() uint64 {
	maps, _ := os.ReadFile("/proc/self/maps")
	return floorOf(maps)
})

// floorOf is the address floor a /proc/self/maps text gives: its first
// (lowest) mapping's start, within [leastAddressFloor, mostAddressFloor];
// leastAddressFloor if the text does not say.
func floorOf(maps []byte) uint64 {
	line, _, _ := bytes.Cut(maps, []byte("\n"))
	start, _, ok := bytes.Cut(line, []byte("-"))
	if !ok {
		return leastAddressFloor
	}
	v, err := strconv.ParseUint(string(start), 16, 64)
	if err != nil {
		return leastAddressFloor
	}
	return min(max(v, leastAddressFloor), mostAddressFloor)
}

// outsideArg finds the first 8-byte argument, among those pointers marks
// (all, if pointers is nil), that could be an address (floor <= v <
// noAddressFrom) and is not in [lo, hi) and not accepted by other; ok is true
// when there is none.
func outsideArg(params []byte, layout []backend.Param, pointers []bool, floor, lo, hi uint64, other func(uint64) bool) (int, uint64, bool) {
	for i, prm := range layout {
		// A pointer is 8-byte aligned in the parameter buffer, as the ABI lays
		// it out: 8 bytes at another offset are a structure of smaller fields.
		if prm.Size != 8 || prm.Offset%8 != 0 || int(prm.Offset)+8 > len(params) {
			continue
		}
		if pointers != nil && i < len(pointers) && !pointers[i] {
			continue
		}
		v := binary.LittleEndian.Uint64(params[prm.Offset:])
		if v < floor || v >= noAddressFrom || (v >= lo && v < hi) || (other != nil && other(v)) {
			continue
		}
		return i, v, false
	}
	return 0, 0, true
}

// guardDone is the completion of a launch: for a guarded program, it reads
// the fault record.
func (s *Session) guardDone(k *kernelObj) func(error) {
	if k.prog == nil || k.prog.guard == nil || k.prog.guard.trusted {
		return nil
	}
	p := k.prog
	return func(err error) {
		s.deferError(err)
		s.checkProgram(p, false)
	}
}

// ---- violations --------------------------------------------------------------

// checkGuard reads every guarded program's fault record; block allows a
// synchronous copy where the record is device memory.
func (s *Session) checkGuard(block bool) {
	s.guard.mu.Lock()
	ps := make([]*programObj, 0, len(s.guard.programs))
	for p := range s.guard.programs {
		ps = append(ps, p)
	}
	s.guard.mu.Unlock()
	for _, p := range ps {
		s.checkProgram(p, block)
	}
}

func (s *Session) checkProgram(p *programObj, block bool) {
	gp := p.guard
	if gp == nil || gp.trusted {
		return
	}
	s.guard.check.Lock()
	defer s.guard.check.Unlock()
	if gp.slot.page == nil || gp.reported.Load() {
		return
	}
	rec, ok, err := s.d.guard.read(s.d, gp.slot, block)
	if err != nil {
		s.d.log.Warn("read fault record", "session", s.id, "err", err)
		return
	}
	if !ok || !rec.Violated() || !gp.reported.CompareAndSwap(false, true) {
		return
	}
	s.violate(p, rec)
}

// violate revokes the session for a recorded violation.
func (s *Session) violate(p *programObj, rec guard.Record) {
	fn := p.guard.res.Function(rec.Function)
	at := fmt.Sprintf("address %#x", rec.Addr)
	if rec.Kinds&guard.KindAccess == 0 {
		at = fmt.Sprintf("PTX line %d", rec.Addr)
	}
	var err error = v1.Errorf(v1.CodeGuardViolation, "guard violation in kernel code %s of program %q: %s, %d time(s), first at %s; the session is revoked",
		fn, p.name, rec.KindString(), rec.Count, at)
	if s.guard.violation.CompareAndSwap(nil, &err) {
		s.violations.Add(1)
		s.mu.Lock()
		s.state = "revoked"
		s.mu.Unlock()
		s.d.log.Warn("guard violation: session revoked", "session", s.id, "tenant", s.tenant.name, "function", fn,
			"kinds", rec.KindString(), "count", rec.Count, "addr", fmt.Sprintf("%#x", rec.Addr))
		s.d.audit(audit.Event{Kind: audit.KindViolation, Tenant: s.tenant.name, Session: s.id, PID: s.params.PID,
			Detail: map[string]any{"program": p.name, "kernel": fn, "kinds": rec.KindString(), "count": rec.Count,
				"addr": fmt.Sprintf("%#x", rec.Addr)}}.WithError(err))
	}
	s.deferError(err)
}

// guardRevoked answers every request of a revoked session (but Hello) with
// its violation.
func (s *Session) guardRevoked(req *wire.Request) error {
	p := s.guard.violation.Load()
	if p == nil {
		return nil
	}
	if _, hello := req.Msg.(*v1.Hello); hello {
		return nil
	}
	return *p
}

// ---- fault records -----------------------------------------------------------

// faultPage holds fault records: mapped host memory, or device memory.
type faultPage struct {
	host  backend.HostMemory // mapped: the device writes these bytes
	dptr  uint64
	chunk backend.Chunk // device-memory fallback
	size  uint64
	// session is the completion page whose fault area this is, or nil for
	// the driver's pages.
	session *completionPage
}

type faultSlot struct {
	page *faultPage
	off  int
}

func (f faultSlot) addr() uint64 {
	if f.page == nil {
		return 0
	}
	return f.page.dptr + uint64(f.off)
}

const mappedPageSize = 4096

func (g *driverGuard) slot(dev backend.Device) (faultSlot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.free) == 0 {
		pg, err := newFaultPage(dev)
		if err != nil {
			return faultSlot{}, fmt.Errorf("allocate fault records: %w", err)
		}
		g.faults = append(g.faults, pg)
		n := min(pg.size/guard.RecordSize, 4096)
		for i := n; i > 0; i-- {
			g.free = append(g.free, faultSlot{page: pg, off: int(i-1) * guard.RecordSize})
		}
	}
	f := g.free[len(g.free)-1]
	g.free = g.free[:len(g.free)-1]
	return f, nil
}

func newFaultPage(dev backend.Device) (*faultPage, error) {
	if ma, ok := dev.(backend.MappedHostAllocator); ok {
		hm, ptr, err := ma.AllocMappedHost(mappedPageSize)
		if err != nil {
			return nil, err
		}
		clear(hm.Bytes())
		return &faultPage{host: hm, dptr: uint64(ptr), size: mappedPageSize}, nil
	}
	gran := dev.Granularity()
	ptr, err := dev.Reserve(gran, gran)
	if err != nil {
		return nil, err
	}
	ch, err := dev.CreateChunk(gran)
	if err != nil {
		dev.Release(ptr, gran)
		return nil, err
	}
	if err := dev.Map(ptr, gran, ch, 0); err != nil {
		ch.Release()
		dev.Release(ptr, gran)
		return nil, err
	}
	if err := dev.SetAccess(ptr, gran); err != nil {
		dev.Unmap(ptr, gran)
		ch.Release()
		dev.Release(ptr, gran)
		return nil, err
	}
	return &faultPage{dptr: uint64(ptr), chunk: ch, size: gran}, nil
}

// private returns the guard's own stream, creating it on first use. Caller holds g.mu.
func (g *driverGuard) private(d *Driver) (backend.Stream, error) {
	if g.stream == nil {
		st, err := d.dev.NewStream(0)
		if err != nil {
			return nil, d.check(err)
		}
		g.stream = st
	}
	return g.stream, nil
}

// write copies b to device memory and waits for it.
func (g *driverGuard) write(d *Driver, dst backend.DevicePtr, b []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	st, err := g.private(d)
	if err != nil {
		return err
	}
	if err := st.CopyHtoD(dst, b); err != nil {
		return d.check(err)
	}
	return d.check(st.Synchronize())
}

// read returns a slot's record; ok is false when it could not be read
// without blocking.
func (g *driverGuard) read(d *Driver, f faultSlot, block bool) (guard.Record, bool, error) {
	if f.page.host != nil {
		r, err := guard.DecodeRecord(f.page.host.Bytes()[f.off:])
		return r, err == nil, err
	}
	if !block {
		return guard.Record{}, false, nil
	}
	buf := make([]byte, guard.RecordSize)
	g.mu.Lock()
	defer g.mu.Unlock()
	st, err := g.private(d)
	if err != nil {
		return guard.Record{}, false, err
	}
	if err := st.CopyDtoH(buf, backend.DevicePtr(f.addr())); err != nil {
		return guard.Record{}, false, d.check(err)
	}
	if err := st.Synchronize(); err != nil {
		return guard.Record{}, false, d.check(err)
	}
	r, err := guard.DecodeRecord(buf)
	return r, err == nil, err
}

// release clears a slot and returns it to the pool.
func (g *driverGuard) release(d *Driver, f faultSlot) {
	if f.page.session != nil {
		clear(f.page.host.Bytes()[f.off : f.off+guard.RecordSize])
		f.page.session.putFault(f.off)
		return
	}
	if f.page.host != nil {
		clear(f.page.host.Bytes()[f.off : f.off+guard.RecordSize])
	} else if err := g.write(d, backend.DevicePtr(f.addr()), make([]byte, guard.RecordSize)); err != nil {
		return // the slot stays out of the pool rather than carry a stale record
	}
	g.mu.Lock()
	g.free = append(g.free, f)
	g.mu.Unlock()
}
