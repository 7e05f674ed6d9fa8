package sdk

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// ABIVersion is the hook ABI this package speaks.
const ABIVersion = 1

// Tenant is a tenant id: a small integer, stable while the driver lives.
type Tenant uint32

// NoTenant dispatches nothing.
const NoTenant Tenant = math.MaxUint32

// Engine is a device engine: compute and copy are scheduled separately.
type Engine uint32

// Engines.
const (
	Compute Engine = 0 // charged in nanoseconds of GPU time
	Copy    Engine = 1 // charged in bytes
)

// Class is a tenant's scheduling class: -1 best effort, 0 normal, 1 high.
type Class int32

// SessionEvent describes a session opening.
type SessionEvent struct {
	Tenant  Tenant
	Session uint64
	PID     int32
	Class   Class
}

// SubmitEvent describes a command entering a tenant's queue.
type SubmitEvent struct {
	Tenant  Tenant
	Engine  Engine
	Session uint64
	Cost    int64 // estimated charge: ns (compute) or bytes (copy)
}

// CompleteEvent describes completed work and its charge.
type CompleteEvent struct {
	Tenant   Tenant
	Engine   Engine
	Commands int
	Charge   int64 // ns of GPU time (compute) or bytes (copy)
	Estimate int64
	Failed   bool
}

// PreemptEvent describes a sliced command yielding between two slices.
type PreemptEvent struct {
	Tenant    Tenant
	Engine    Engine
	Remaining uint32
	By        Tenant
}

// AllocEvent describes an allocation about to be made.
type AllocEvent struct {
	Tenant Tenant
	Bytes  uint64
	Used   uint64 // the tenant's bytes in use before it
	Quota  uint64 // 0: none
}

// Pressure describes a shortage of device memory.
type Pressure struct {
	Need   uint64 // bytes to free
	Tenant Tenant // whose request needs them (NoTenant: none)
	Window uint64 // the requester's window (0: none)
	SwapIn bool   // the request makes Window resident
}

// Candidate is a chunk that may be evicted.
type Candidate struct {
	Tenant   Tenant
	Priority int32
	Shared   bool // mapped in other sessions too
	Slab     bool // holds several small allocations
	Bytes    uint64
	LastUse  uint64 // larger is more recent
	Window   uint64
}

// Fault kinds.
const (
	FaultGuard  = 1 // a guarded kernel tried to leave its window
	FaultDevice = 2 // the device context was lost
	FaultLaunch = 3 // a kernel failed on the device
)

// FaultEvent describes a fault.
type FaultEvent struct {
	Tenant  Tenant
	Session uint64
	Kind    uint32
}

// Decision is OnDispatch's answer; make one with Run, RunSliced or Wait.
type Decision struct {
	Tenant Tenant
	// Hold (with NoTenant) or Quantum (with a tenant), at most about 4.29 s.
	Duration time.Duration
}

// Run dispatches the next command of tenant t.
func Run(t Tenant) Decision { return Decision{Tenant: t} }

// RunSliced dispatches t's next command, slicing a long kernel into parts
// of about quantum of device time.
func RunSliced(t Tenant, quantum time.Duration) Decision {
	return Decision{Tenant: t, Duration: quantum}
}

// Wait dispatches nothing; the host asks again at the next submission or
// completion, or after hold if it is positive.
func Wait(hold time.Duration) Decision { return Decision{Tenant: NoTenant, Duration: hold} }

// encode packs a decision as the ABI's i64: tenant in the low half, the
// duration in nanoseconds (saturated) in the high half.
func (d Decision) encode() uint64 {
	ns := uint64(0)
	if d.Duration > 0 {
		ns = uint64(min(d.Duration, time.Duration(math.MaxUint32)))
	}
	return ns<<32 | uint64(d.Tenant)
}

// The hooks. A policy implements any of them.
type (
	// Initializer runs when the policy is loaded and when it becomes active.
	Initializer interface{ Init() error }
	// SessionOpener decides admission: false refuses the session.
	SessionOpener interface{ OnSessionOpen(SessionEvent) bool }
	// Submitter is told of every command entering a queue.
	Submitter interface{ OnSubmit(SubmitEvent) error }
	// Dispatcher picks the next queue of an engine among the ready tenants
	// (increasing ids; the slice is reused after the call).
	Dispatcher interface {
		OnDispatch(e Engine, ready []Tenant) Decision
	}
	// Completer is told of completed work and its charge.
	Completer interface{ OnComplete(CompleteEvent) error }
	// Preempter is told when a sliced command yields to another tenant.
	Preempter interface{ OnPreempt(PreemptEvent) error }
	// Ticker runs periodically while there is work.
	Ticker interface{ OnTick(now time.Duration) error }
	// AllocChecker decides whether an allocation may be made.
	AllocChecker interface{ OnAlloc(AllocEvent) bool }
	// VictimChooser picks chunks to evict, best victim first, as indices
	// into cands (listed least recently used first). Naming one twice or
	// one out of range ejects the policy.
	VictimChooser interface {
		OnPressure(p Pressure, cands []Candidate) []int
	}
	// FaultHandler is told of faults.
	FaultHandler interface{ OnFault(FaultEvent) error }
)

// Hook bits of gpuos_hooks, in ABI order.
const (
	hookInit = 1 << iota
	hookSessionOpen
	hookSubmit
	hookDispatch
	hookComplete
	hookPreempt
	hookTick
	hookAlloc
	hookPressure
	hookFault
)

// registered is the policy; hooks the bit set of what it implements.
var (
	registered any
	hooks      uint64
)

// ErrRegistered is Register's answer to a second policy.
var ErrRegistered = errors.New("sdk: a policy is already registered")

// Register makes p the module's policy. Call it once, from an init function.
func Register(p any) error {
	if registered != nil {
		return ErrRegistered
	}
	registered = p
	hooks = hooksOf(p)
	return nil
}

func hooksOf(p any) uint64 {
	var h uint64
	if _, ok := p.(Initializer); ok {
		h |= hookInit
	}
	if _, ok := p.(SessionOpener); ok {
		h |= hookSessionOpen
	}
	if _, ok := p.(Submitter); ok {
		h |= hookSubmit
	}
	if _, ok := p.(Dispatcher); ok {
		h |= hookDispatch
	}
	if _, ok := p.(Completer); ok {
		h |= hookComplete
	}
	if _, ok := p.(Preempter); ok {
		h |= hookPreempt
	}
	if _, ok := p.(Ticker); ok {
		h |= hookTick
	}
	if _, ok := p.(AllocChecker); ok {
		h |= hookAlloc
	}
	if _, ok := p.(VictimChooser); ok {
		h |= hookPressure
	}
	if _, ok := p.(FaultHandler); ok {
		h |= hookFault
	}
	return h
}

// The exchange area: the host writes hook inputs at its start.
var exch []byte

func exchangeArea(size int32) []byte {
	if size > 0 && int(size) > len(exch) {
		exch = make([]byte, size)
	}
	if len(exch) == 0 {
		exch = make([]byte, 8)
	}
	return exch
}

// Results of notification hooks.
func result(err error) int32 {
	if err != nil {
		Log("hook failed: " + err.Error())
		return 1
	}
	return 0
}

func admit(ok bool) int32 {
	if ok {
		return 0
	}
	return 1
}

var readyBuf []Tenant

// dispatch decodes the ready list from the exchange area and asks the policy.
func dispatch(e Engine, n uint32) uint64 {
	d, ok := registered.(Dispatcher)
	if !ok || uint64(n)*4 > uint64(len(exch)) {
		return Wait(0).encode()
	}
	readyBuf = readyBuf[:0]
	for k := uint32(0); k < n; k++ {
		readyBuf = append(readyBuf, Tenant(binary.LittleEndian.Uint32(exch[4*k:])))
	}
	return d.OnDispatch(e, readyBuf).encode()
}

var candBuf []Candidate

// candidateSize is the ABI's record: u32 tenant, i32 priority, u32 flags,
// u32 zero, u64 bytes, u64 last_use, u64 window.
const candidateSize = 40

// pressure decodes the candidates, asks the policy and writes the answer
// after them.
func pressure(p Pressure, n uint32) int32 {
	v, ok := registered.(VictimChooser)
	if !ok || uint64(n)*(candidateSize+4) > uint64(len(exch)) {
		return 0
	}
	candBuf = candBuf[:0]
	for k := uint32(0); k < n; k++ {
		r := exch[k*candidateSize:]
		flags := binary.LittleEndian.Uint32(r[8:])
		candBuf = append(candBuf, Candidate{
			Tenant:   Tenant(binary.LittleEndian.Uint32(r[0:])),
			Priority: int32(binary.LittleEndian.Uint32(r[4:])),
			Shared:   flags&1 != 0,
			Slab:     flags&2 != 0,
			Bytes:    binary.LittleEndian.Uint64(r[16:]),
			LastUse:  binary.LittleEndian.Uint64(r[24:]),
			Window:   binary.LittleEndian.Uint64(r[32:]),
		})
	}
	victims := v.OnPressure(p, candBuf)
	out := exch[n*candidateSize:]
	k := 0
	for _, i := range victims {
		if k == int(n) {
			break
		}
		binary.LittleEndian.PutUint32(out[4*k:], uint32(i))
		k++
	}
	return int32(k)
}

// Map is a typed map shared with the host: one int64 per tenant, readable
// with gpuos policy maps as "<policy>.<name>".
type Map struct {
	h int32
}

// ErrMapName is OpenMap's answer to a bad name or too many maps.
var ErrMapName = errors.New("sdk: bad map name (1-64 of a-z 0-9 . _ -) or more than 64 maps")

// OpenMap opens (creating it if needed, all zero) the map with this name.
func OpenMap(name string) (Map, error) {
	h := host().MapOpen(name)
	if h < 0 {
		return Map{}, ErrMapName
	}
	return Map{h: h}, nil
}

// MustMap is OpenMap for names known to be good; it panics otherwise (which
// ejects the policy).
func MustMap(name string) Map {
	m, err := OpenMap(name)
	if err != nil {
		panic(err)
	}
	return m
}

// Get returns t's value.
func (m Map) Get(t Tenant) int64 { return host().MapGet(m.h, t) }

// Set sets t's value.
func (m Map) Set(t Tenant, v int64) { host().MapSet(m.h, t, v) }

// Add adds d to t's value and returns the sum.
func (m Map) Add(t Tenant, d int64) int64 { return host().MapAdd(m.h, t, d) }

// Reset zeroes every value.
func (m Map) Reset() { host().MapReset(m.h) }

// Host is the ABI's host functions. Inside WebAssembly they are the real
// ones; elsewhere, the Host given to SetHost (for tests).
type Host interface {
	Now() time.Duration
	NumTenants() int
	TenantName(t Tenant) string
	Class(t Tenant) Class
	Weight(t Tenant, e Engine) int64
	MemoryShare(t Tenant) uint64
	Sessions(t Tenant) int
	Queued(t Tenant, e Engine) int
	InFlight(t Tenant, e Engine) int
	InFlightCost(t Tenant, e Engine) int64
	Usage(t Tenant, e Engine) int64
	HeadCost(t Tenant, e Engine) int64
	HeadSeq(t Tenant, e Engine) uint64
	EngineInFlight(e Engine) int
	SliceTarget() time.Duration
	MapOpen(name string) int32
	MapGet(h int32, t Tenant) int64
	MapSet(h int32, t Tenant, v int64)
	MapAdd(h int32, t Tenant, d int64) int64
	MapReset(h int32)
	Log(msg string)
}

// Now is the scheduler's clock: time since the scheduler started.
func Now() time.Duration { return host().Now() }

// NumTenants is how many tenants exist; their ids are 0..NumTenants()-1.
func NumTenants() int { return host().NumTenants() }

// TenantName returns a tenant's name ("" for an unknown id).
func TenantName(t Tenant) string { return host().TenantName(t) }

// ClassOf returns a tenant's effective class.
func ClassOf(t Tenant) Class { return host().Class(t) }

// Weight returns a tenant's share weight on an engine (>= 1).
func Weight(t Tenant, e Engine) int64 { return host().Weight(t, e) }

// MemoryShare returns a tenant's memory share in bytes (0: none).
func MemoryShare(t Tenant) uint64 { return host().MemoryShare(t) }

// Sessions returns how many sessions a tenant has open.
func Sessions(t Tenant) int { return host().Sessions(t) }

// Queued returns how many commands of an engine a tenant has waiting.
func Queued(t Tenant, e Engine) int { return host().Queued(t, e) }

// InFlight returns how many commands of an engine a tenant has issued and not
// seen complete.
func InFlight(t Tenant, e Engine) int { return host().InFlight(t, e) }

// InFlightCost returns the estimated charge of a tenant's in-flight work.
func InFlightCost(t Tenant, e Engine) int64 { return host().InFlightCost(t, e) }

// Usage returns what a tenant has been charged on an engine: ns or bytes.
func Usage(t Tenant, e Engine) int64 { return host().Usage(t, e) }

// HeadCost returns the estimated charge of the command a ready tenant would
// issue next.
func HeadCost(t Tenant, e Engine) int64 { return host().HeadCost(t, e) }

// HeadSeq returns the device-wide submission number of that command.
func HeadSeq(t Tenant, e Engine) uint64 { return host().HeadSeq(t, e) }

// EngineInFlight returns how many commands of an engine are in flight.
func EngineInFlight(e Engine) int { return host().EngineInFlight(e) }

// SliceTarget is the scheduler's preferred slice length.
func SliceTarget() time.Duration { return host().SliceTarget() }

// Log writes a line to the policy's log (kept by the host, bounded).
func Log(msg string) { host().Log(msg) }
