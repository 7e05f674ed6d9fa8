package policy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// fuelQuantum is how many check sites (function entries and loop headers) a
// guest passes between two calls of the meter. The meter costs about as much
// as one host call, so it is noise at this rate, and it bounds how long a
// guest runs after Interrupt lost a race with its own fuel update.
const fuelQuantum = 4096

// exitStopped is the exit code the host stops a guest with; the reason is
// kept in Instance.stopErr.
const exitStopped = 0xdead

// Instance is one running copy of a policy module: its own runtime, memory
// and Go runtime (for a Go guest). Its hooks may be called from any
// goroutine; they are serialized. An Instance that misbehaves — traps,
// exits, overruns its deadline, reaches its memory limit, misuses the ABI or
// returns an invalid decision — is stopped for good: the hook returns the
// reason (Err returns it later), and every later hook returns it too. The
// caller then ejects the policy.
type Instance struct {
	m    *Module
	ctx  context.Context
	rt   wazero.Runtime
	mod  api.Module
	log  guestLog
	wasi wasi

	// Guarded by mu, which every call holds.
	mu       sync.Mutex
	env      Env
	store    *Maps
	maps     []string // full names of the maps the guest opened
	fns      [numHooks]api.Function
	exchFn   api.Function
	exch     uint32 // exchange area: address and size in guest memory
	exchSize uint32
	flags    uint64 // FlagSubmitIdleOnly, FlagWorkConserving
	stack    [8]uint64
	stopErr  error // why a host function stopped the guest
	dead     error

	// Read by Interrupt and the watchdog without mu.
	seq      atomic.Uint64 // odd while a call is in progress
	killSeq  atomic.Uint64 // the call Interrupt asked to stop
	deadline atomic.Int64  // of the call in progress, ns
	gmu      sync.Mutex    // guards fuel against the runtime closing
	fuel     api.MutableGlobal
	gone     bool
}

// Instantiate starts a new instance of the module and initializes it:
// the reactor's _initialize, the ABI version check, the exchange area, and
// the module's gpuos_init if it exports one (with no Env: the tenant host
// functions read zero). Its maps are kept in store (nil: a store of its own).
func (m *Module) Instantiate(ctx context.Context, store *Maps) (*Instance, error) {
	if err := m.acquire(); err != nil {
		return nil, err
	}
	if store == nil {
		store = NewMaps()
	}
	i := &Instance{m: m, ctx: context.Background(), store: store}
	i.wasi = wasi{rng: m.seed(), log: &i.log}
	name := m.name
	i.log.sink = func(line string) { m.log.Debug("policy output", "policy", name, "line", line) }
	if err := i.start(ctx); err != nil {
		i.Close()
		return nil, err
	}
	return i, nil
}

func (i *Instance) start(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	m := i.m
	i.rt = m.runtime(ctx)
	if err := i.wasi.instantiate(ctx, i.rt); err != nil {
		return fmt.Errorf("instantiate WASI subset: %w", err)
	}
	if err := i.instantiateHost(ctx); err != nil {
		return fmt.Errorf("instantiate host functions: %w", err)
	}
	cm, err := i.rt.CompileModule(ctx, m.wasm)
	if err != nil {
		return fmt.Errorf("compile: %v: %w", err, ErrInvalidModule)
	}
	watch(i)
	// Instantiation runs the start function, if any: time it like a call.
	i.deadline.Store(int64(m.limits.InitDeadline))
	i.seq.Add(1)
	mod, err := i.rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("policy").WithStartFunctions())
	i.seq.Add(1)
	if err != nil {
		return i.fail("instantiate", err)
	}
	i.mod = mod
	if mod.Memory() == nil {
		return i.fail("instantiate", fmt.Errorf("module has no memory: %w", ErrInvalidModule))
	}
	g, ok := mod.ExportedGlobal(exportFuel).(api.MutableGlobal)
	if !ok {
		return i.fail("instantiate", fmt.Errorf("fuel counter missing: %w", ErrInvalidModule))
	}
	i.gmu.Lock()
	i.fuel = g
	i.gmu.Unlock()
	for h := Hook(0); h < numHooks; h++ {
		if m.hooks&(1<<h) != 0 {
			i.fns[h] = mod.ExportedFunction(hookDefs[h].name)
		}
	}
	init := m.limits.InitDeadline
	if f := mod.ExportedFunction(exportInitialize); f != nil {
		if err := i.invoke("_initialize", f, nil, init, i.stack[:0]); err != nil {
			return err
		}
	}
	st := i.stack[:1]
	if err := i.invoke(exportVersion, mod.ExportedFunction(exportVersion), nil, init, st); err != nil {
		return err
	}
	if v := uint32(st[0]); v != ABIVersion {
		return i.fail(exportVersion, fmt.Errorf("module speaks ABI version %d, host speaks %d: %w", v, ABIVersion, ErrABIVersion))
	}
	if f := mod.ExportedFunction(exportHooks); f != nil {
		if err := i.invoke(exportHooks, f, nil, init, st); err != nil {
			return err
		}
		// A module may export hooks it leaves to the host (an SDK exports them all).
		for h := Hook(0); h < numHooks; h++ {
			if st[0]&(1<<h) == 0 {
				i.fns[h] = nil
			}
		}
		i.flags = st[0] & (FlagSubmitIdleOnly | FlagWorkConserving)
	}
	if f := mod.ExportedFunction(exportExchange); f != nil {
		i.exchFn = f
		if err := i.growExchange(defaultExchange); err != nil {
			return err
		}
	}
	if f := i.fns[HookInit]; f != nil {
		if err := i.invoke("init", f, nil, init, st); err != nil {
			return err
		}
		if r := uint32(st[0]); r != ResultOK {
			return i.fail("init", fmt.Errorf("gpuos_init returned %d: %w", int32(r), ErrTrap))
		}
	}
	return nil
}

// growExchange asks the guest for an exchange area of at least size bytes.
func (i *Instance) growExchange(size uint32) error {
	st := i.stack[:1]
	st[0] = uint64(size)
	if err := i.invoke(exportExchange, i.exchFn, i.env, i.m.limits.InitDeadline, st); err != nil {
		return err
	}
	ptr := uint32(st[0])
	if ptr == 0 || ptr%8 != 0 || uint64(ptr)+uint64(size) > uint64(i.mod.Memory().Size()) {
		return i.fail(exportExchange, fmt.Errorf("gpuos_exchange(%d) returned %#x, not an aligned area inside memory: %w", size, ptr, ErrABI))
	}
	i.exch, i.exchSize = ptr, size
	return nil
}

// Has reports whether the instance runs a hook (the module exports it and,
// if it says which hooks it implements, names it).
func (i *Instance) Has(h Hook) bool { return h < numHooks && i.fns[h] != nil }

// Module returns the module the instance runs.
func (i *Instance) Module() *Module { return i.m }

// Log returns the last lines the guest wrote.
func (i *Instance) Log() []string { return i.log.Lines() }

// Err returns why the instance was stopped, or nil while it runs.
func (i *Instance) Err() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.dead
}

// Interrupt stops the hook call in progress, if there is one: the guest
// stops at its next check site (within a few microseconds for any guest the
// pass accepted) and the call returns ErrDeadline. It is safe to call from
// any goroutine, and does nothing between calls.
func (i *Instance) Interrupt() { i.interrupt(i.seq.Load()) }

// interrupt stops the call with sequence number s if it is still in
// progress: the watchdog names the call it saw overrun, so that a call
// started since is not stopped in its place.
func (i *Instance) interrupt(s uint64) {
	if s&1 == 0 || i.seq.Load() != s {
		return
	}
	i.killSeq.Store(s)
	i.gmu.Lock()
	if i.fuel != nil && !i.gone {
		// Zero the fuel so the guest asks the meter at its next check site.
		// This store races with the guest's own updates of the counter by
		// design; if the guest overwrites it, the meter still sees killSeq
		// within fuelQuantum check sites, and the watchdog stores it again.
		i.fuel.Set(0)
	}
	i.gmu.Unlock()
}

// Close stops the instance and releases its runtime. A call in progress is
// interrupted first.
func (i *Instance) Close() error {
	i.Interrupt()
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.dead == nil {
		i.dead = ErrClosed
	}
	return i.release()
}

// release closes the runtime once. Called with mu held.
func (i *Instance) release() error {
	i.gmu.Lock()
	gone := i.gone
	i.gone = true
	i.gmu.Unlock()
	if gone {
		return nil
	}
	unwatch(i)
	i.store.release(i, func(ptr, n uint32) []byte {
		if i.mod == nil {
			return nil
		}
		b, _ := i.mod.Memory().Read(ptr, n)
		return b
	})
	var err error
	if i.rt != nil {
		err = i.rt.Close(context.Background())
	}
	i.m.release()
	return err
}

// invoke calls a guest function with the stack as its arguments and results.
// Called with mu held.
func (i *Instance) invoke(what string, f api.Function, env Env, deadline time.Duration, stack []uint64) error {
	if i.dead != nil {
		return i.dead
	}
	i.env = env
	i.deadline.Store(int64(deadline))
	i.seq.Add(1)
	err := f.CallWithStack(i.ctx, stack)
	i.seq.Add(1)
	i.env = nil
	if err != nil {
		return i.fail(what, err)
	}
	return nil
}

// fail stops the instance for good with the reason err (or what a host
// function recorded). Called with mu held.
func (i *Instance) fail(what string, err error) error {
	if i.dead != nil {
		return i.dead
	}
	reason := err
	var exit *sys.ExitError
	switch {
	case i.stopErr != nil:
		reason = i.stopErr
	case errors.As(err, &exit):
		reason = fmt.Errorf("exited with code %d: %w", exit.ExitCode(), ErrTrap)
	case !isPolicyError(err):
		// A wasm trap: keep its first line (the rest is a stack trace).
		msg, _, _ := strings.Cut(err.Error(), "\n")
		reason = fmt.Errorf("%s: %w", msg, ErrTrap)
	}
	if c := i.log.cause(); c != "" && !errors.Is(reason, ErrInvalidDecision) {
		reason = fmt.Errorf("%w (guest said %q)", reason, c)
	}
	i.dead = fmt.Errorf("policy %q %s: %w", i.m.name, what, reason)
	i.m.log.Warn("policy stopped", "policy", i.m.name, "hook", what, "err", i.dead)
	i.release()
	return i.dead
}

func isPolicyError(err error) bool {
	for _, e := range []error{ErrInvalidModule, ErrImportRefused, ErrABIVersion, ErrDeadline, ErrMemoryLimit, ErrTrap, ErrInvalidDecision, ErrABI, ErrClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// stop ends the guest from inside a host function.
func (i *Instance) stop(err error) {
	i.stopErr = err
	panic(sys.NewExitError(exitStopped))
}

// memory returns n bytes of guest memory at ptr, stopping the guest if they
// are not all inside it.
func (i *Instance) memory(mod api.Module, ptr, n uint32, what string) []byte {
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		i.stop(fmt.Errorf("%s: %d bytes at %#x are outside memory: %w", what, n, ptr, ErrABI))
	}
	return b
}

// instantiateHost instantiates module "gpuos": the ABI's host functions and
// the pass's meter and grow, bound to this instance.
func (i *Instance) instantiateHost(ctx context.Context) error {
	b := i.rt.NewHostModuleBuilder(ModuleName)
	fn := func(name string, params, results []api.ValueType, f api.GoModuleFunc) {
		b.NewFunctionBuilder().WithGoModuleFunction(f, params, results).Export(name)
	}
	fn(importMeter, nil, []api.ValueType{i32}, func(_ context.Context, _ api.Module, stack []uint64) {
		if s := i.seq.Load(); s&1 == 1 && i.killSeq.Load() == s {
			i.stop(fmt.Errorf("ran past %v: %w", time.Duration(i.deadline.Load()), ErrDeadline))
		}
		stack[0] = fuelQuantum
	})
	fn(importGrow, []api.ValueType{i32}, []api.ValueType{i32}, func(_ context.Context, mod api.Module, stack []uint64) {
		delta := uint32(stack[0])
		prev, ok := mod.Memory().Grow(delta)
		if !ok {
			i.stop(fmt.Errorf("memory.grow by %d pages past the limit of %d bytes (had %d): %w",
				delta, i.m.limits.Memory, mod.Memory().Size(), ErrMemoryLimit))
		}
		stack[0] = uint64(prev)
	})
	host := func(name string, f api.GoModuleFunc) {
		d := hostFuncs[name]
		fn(name, d.params, d.results, f)
	}
	t := func(stack []uint64, k int) uint32 { return uint32(stack[k]) }
	host("now", func(_ context.Context, _ api.Module, stack []uint64) {
		if i.env != nil {
			stack[0] = uint64(i.env.Now())
		} else {
			stack[0] = 0
		}
	})
	host("num_tenants", func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = 0
		if i.env != nil {
			stack[0] = uint64(uint32(i.env.NumTenants()))
		}
	})
	host("tenant_name", func(_ context.Context, mod api.Module, stack []uint64) {
		id, ptr, n := t(stack, 0), t(stack, 1), t(stack, 2)
		var name string
		if i.env != nil {
			name = i.env.TenantName(id)
		}
		if name == "" {
			stack[0] = uint64(uint32(0xffffffff))
			return
		}
		buf := i.memory(mod, ptr, n, "tenant_name")
		copy(buf, name)
		stack[0] = uint64(uint32(len(name)))
	})
	tenantI32 := func(name string, get func(Env, uint32) int) {
		host(name, func(_ context.Context, _ api.Module, stack []uint64) {
			v := 0
			if i.env != nil {
				v = get(i.env, t(stack, 0))
			}
			stack[0] = uint64(uint32(int32(v)))
		})
	}
	tenantI32("tenant_class", Env.Class)
	tenantI32("tenant_sessions", Env.Sessions)
	host("tenant_memory_share", func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = 0
		if i.env != nil {
			stack[0] = i.env.MemoryShare(t(stack, 0))
		}
	})
	engI64 := func(name string, get func(Env, uint32, uint32) int64) {
		host(name, func(_ context.Context, _ api.Module, stack []uint64) {
			var v int64
			if i.env != nil {
				v = get(i.env, t(stack, 0), t(stack, 1))
			}
			stack[0] = uint64(v)
		})
	}
	engI32 := func(name string, get func(Env, uint32, uint32) int) {
		host(name, func(_ context.Context, _ api.Module, stack []uint64) {
			v := 0
			if i.env != nil {
				v = get(i.env, t(stack, 0), t(stack, 1))
			}
			stack[0] = uint64(uint32(int32(v)))
		})
	}
	engI64("tenant_weight", Env.Weight)
	engI64("usage", Env.Usage)
	engI64("head_cost", Env.HeadCost)
	engI64("in_flight_cost", Env.InFlightCost)
	engI64("head_seq", func(e Env, t, eng uint32) int64 { return int64(e.HeadSeq(t, eng)) })
	engI32("queued", Env.Queued)
	engI32("in_flight", Env.InFlight)
	host("engine_in_flight", func(_ context.Context, _ api.Module, stack []uint64) {
		v := 0
		if i.env != nil {
			v = i.env.EngineInFlight(t(stack, 0))
		}
		stack[0] = uint64(uint32(int32(v)))
	})
	host("slice_target", func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = 0
		if i.env != nil {
			stack[0] = uint64(i.env.SliceTarget())
		}
	})
	host("high_class_reserved", func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = 0
		if i.env != nil && i.env.HighClassReserved() {
			stack[0] = 1
		}
	})
	host("map_open", func(_ context.Context, mod api.Module, stack []uint64) {
		stack[0] = uint64(uint32(i.openMap(mod, t(stack, 0), t(stack, 1), t(stack, 2), t(stack, 3))))
	})
	host("log", func(_ context.Context, mod api.Module, stack []uint64) {
		ptr, n := t(stack, 0), t(stack, 1)
		i.log.line(string(i.memory(mod, ptr, min(n, maxLogLine), "log")))
	})
	_, err := b.Instantiate(ctx)
	return err
}

// openMap registers the guest's array of n int64 at vals as the map named
// by the name at namePtr. It returns a handle (>= 0), -1 for a bad name,
// a bad array, too many maps or a map another instance holds, or -need
// (<= -2) when the array is too small for the map's current values.
func (i *Instance) openMap(mod api.Module, namePtr, nameLen, vals, n uint32) int32 {
	if nameLen > maxMapNameLen || n == 0 || n > maxMapTenants || vals%8 != 0 {
		return -1
	}
	name := string(i.memory(mod, namePtr, nameLen, "map_open"))
	buf, ok := mod.Memory().Read(vals, 8*n)
	if !validMapName(name) || !ok {
		return -1
	}
	full := i.m.name + "." + name
	h := -1
	for k, x := range i.maps {
		if x == full {
			h = k
		}
	}
	if h < 0 && len(i.maps) >= maxMaps {
		return -1
	}
	ok, need := i.store.open(i, full, vals, n, buf)
	switch {
	case !ok:
		return -1
	case need > n:
		return -int32(need)
	}
	if h < 0 {
		i.maps = append(i.maps, full)
		h = len(i.maps) - 1
	}
	return int32(h)
}

// readMap reads a map the instance holds, between hooks.
func (i *Instance) readMap(s *Maps, name string) []int64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	s.mu.Lock()
	e := s.m[name]
	var ptr, n uint32
	held := e != nil && e.live == i
	if held {
		ptr, n = e.ptr, e.n
	} else if e != nil {
		vals := append([]int64(nil), e.vals...)
		s.mu.Unlock()
		return vals
	}
	s.mu.Unlock()
	if !held || i.mod == nil {
		return nil
	}
	b, ok := i.mod.Memory().Read(ptr, 8*n)
	if !ok {
		return nil
	}
	return decodeValues(b)
}

// MapNames returns the full names of the maps the guest opened.
func (i *Instance) MapNames() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]string(nil), i.maps...)
}

// exchange returns the exchange area with room for n bytes, asking the
// guest for a larger one if needed (n is at most maxExchange).
// Called with mu held.
func (i *Instance) exchange(n uint32) (ptr uint32, buf []byte, err error) {
	if n > i.exchSize {
		if n > maxExchange {
			return 0, nil, nil
		}
		if err := i.growExchange(max(n, 2*i.exchSize)); err != nil {
			return 0, nil, err
		}
	}
	buf, ok := i.mod.Memory().Read(i.exch, n)
	if !ok {
		return 0, nil, i.fail(exportExchange, fmt.Errorf("exchange area %#x+%d is outside memory: %w", i.exch, n, ErrABI))
	}
	return i.exch, buf, nil
}

var le = binary.LittleEndian

// reject stops the instance for a decision its caller found invalid.
func (i *Instance) reject(what string, err error) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.fail(what, err)
}
