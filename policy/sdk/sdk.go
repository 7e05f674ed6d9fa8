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
	// Queued and InFlight are the tenant's counts on the engine with this
	// command queued (Queued == 1 && InFlight == 0: it was idle).
	Queued, InFlight int
}

// CompleteEvent describes completed work and its charge.
type CompleteEvent struct {
	Tenant   Tenant
	Engine   Engine
	Commands int
	Charge   int64 // ns of GPU time (compute) or bytes (copy)
	Estimate int64
	Failed   bool
	Weight   int64 // the tenant's weight on the engine now
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

// Ready is a tenant with a command ready to dispatch on an engine, with
// what dispatch decisions most often need (all of that engine), so a policy
// needs no host call for them. It is a view of the host's record, decoded
// field by field on demand (decoding costs time in WebAssembly), valid
// during the OnDispatch call only.
type Ready struct {
	b []byte // the ABI's 56-byte record
}

func (r Ready) u32(off int) uint32 { return binary.LittleEndian.Uint32(r.b[off : off+4]) }
func (r Ready) u64(off int) uint64 { return binary.LittleEndian.Uint64(r.b[off : off+8]) }

// Tenant is the ready tenant.
func (r Ready) Tenant() Tenant { return Tenant(r.u32(0)) }

// Queued is how many of its commands wait.
func (r Ready) Queued() int { return int(r.u32(4)) }

// InFlight is how many it has issued and not seen complete.
func (r Ready) InFlight() int { return int(r.u32(8)) }

// Class is its effective class.
func (r Ready) Class() Class { return Class(int32(r.u32(12))) }

// Weight is its share weight on the engine (>= 1).
func (r Ready) Weight() int64 { return int64(r.u64(16)) }

// InFlightCost is the estimated charge of what it has in flight.
func (r Ready) InFlightCost() int64 { return int64(r.u64(24)) }

// HeadCost is the estimated charge of the command it would issue.
func (r Ready) HeadCost() int64 { return int64(r.u64(32)) }

// HeadSeq is that command's device-wide submission number.
func (r Ready) HeadSeq() uint64 { return r.u64(40) }

// Usage is what it has been charged so far on the engine: ns or bytes.
func (r Ready) Usage() int64 { return int64(r.u64(48)) }

// NewReady makes a Ready from its fields, for tests of a policy's logic.
func NewReady(t Tenant, queued, inFlight int, class Class, weight, inFlightCost, headCost int64, headSeq uint64, usage int64) Ready {
	b := make([]byte, readySize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(t))
	le.PutUint32(b[4:], uint32(queued))
	le.PutUint32(b[8:], uint32(inFlight))
	le.PutUint32(b[12:], uint32(class))
	le.PutUint64(b[16:], uint64(weight))
	le.PutUint64(b[24:], uint64(inFlightCost))
	le.PutUint64(b[32:], uint64(headCost))
	le.PutUint64(b[40:], headSeq)
	le.PutUint64(b[48:], uint64(usage))
	return Ready{b}
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
		OnDispatch(e Engine, ready []Ready) Decision
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

// registered is the policy; hooks the bit set of what it implements. The
// hooks are resolved once, here: a type assertion costs about half a
// microsecond in WebAssembly, more than the rest of a hook call.
var (
	registered any
	hooks      uint64

	onInit        func() error
	onSessionOpen func(SessionEvent) bool
	onSubmit      func(SubmitEvent) error
	onDispatch    func(Engine, []Ready) Decision
	onComplete    func(CompleteEvent) error
	onPreempt     func(PreemptEvent) error
	onTick        func(time.Duration) error
	onAlloc       func(AllocEvent) bool
	onPressure    func(Pressure, []Candidate) []int
	onFault       func(FaultEvent) error
)

// ErrRegistered is Register's answer to a second policy.
var ErrRegistered = errors.New("sdk: a policy is already registered")

// Register makes p the module's policy. Call it once, from an init function.
func Register(p any) error {
	if registered != nil {
		return ErrRegistered
	}
	registered = p
	hooks = 0
	if h, ok := p.(Initializer); ok {
		onInit, hooks = h.Init, hooks|hookInit
	}
	if h, ok := p.(SessionOpener); ok {
		onSessionOpen, hooks = h.OnSessionOpen, hooks|hookSessionOpen
	}
	if h, ok := p.(Submitter); ok {
		onSubmit, hooks = h.OnSubmit, hooks|hookSubmit
	}
	if h, ok := p.(Dispatcher); ok {
		onDispatch, hooks = h.OnDispatch, hooks|hookDispatch
	}
	if h, ok := p.(Completer); ok {
		onComplete, hooks = h.OnComplete, hooks|hookComplete
	}
	if h, ok := p.(Preempter); ok {
		onPreempt, hooks = h.OnPreempt, hooks|hookPreempt
	}
	if h, ok := p.(Ticker); ok {
		onTick, hooks = h.OnTick, hooks|hookTick
	}
	if h, ok := p.(AllocChecker); ok {
		onAlloc, hooks = h.OnAlloc, hooks|hookAlloc
	}
	if h, ok := p.(VictimChooser); ok {
		onPressure, hooks = h.OnPressure, hooks|hookPressure
	}
	if h, ok := p.(FaultHandler); ok {
		onFault, hooks = h.OnFault, hooks|hookFault
	}
	if h, ok := p.(SubmitIdleOnly); ok && h.SubmitIdleOnly() {
		hooks |= flagSubmitIdleOnly
	}
	if h, ok := p.(WorkConserving); ok && h.WorkConserving() {
		hooks |= flagWorkConserving
	}
	return nil
}

// Flags of gpuos_hooks, after the hook bits.
const (
	flagSubmitIdleOnly = 1 << 32
	flagWorkConserving = 1 << 33
)

// Optional declarations that spare a policy hook calls it does not need
// (each costs about a tenth of a microsecond).
type (
	// SubmitIdleOnly: a Submitter that returning true is told only of the
	// commands that find their tenant idle on the engine (Queued 1,
	// InFlight 0).
	SubmitIdleOnly interface{ SubmitIdleOnly() bool }
	// WorkConserving: a Dispatcher that returning true always dispatches
	// the only ready tenant, so the host does it without asking.
	WorkConserving interface{ WorkConserving() bool }
)

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

var readyBuf []Ready

// readySize is the ABI's record of a ready tenant: u32 tenant, u32 queued,
// u32 in_flight, i32 class, i64 weight, i64 in_flight_cost, i64 head_cost,
// u64 head_seq, i64 usage.
const readySize = 56

// dispatch decodes the ready records from the exchange area and asks the
// policy.
func dispatch(e Engine, n uint32) uint64 {
	if onDispatch == nil || uint64(n)*readySize > uint64(len(exch)) {
		return Wait(0).encode()
	}
	readyBuf = readyBuf[:0]
	for k := uint32(0); k < n; k++ {
		readyBuf = append(readyBuf, Ready{exch[k*readySize : (k+1)*readySize]})
	}
	return onDispatch(e, readyBuf).encode()
}

var candBuf []Candidate

// candidateSize is the ABI's record: u32 tenant, i32 priority, u32 flags,
// u32 zero, u64 bytes, u64 last_use, u64 window.
const candidateSize = 40

// pressure decodes the candidates, asks the policy and writes the answer
// after them.
func pressure(p Pressure, n uint32) int32 {
	if onPressure == nil || uint64(n)*(candidateSize+4) > uint64(len(exch)) {
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
	victims := onPressure(p, candBuf)
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
// with gpuos policy maps as "<policy>.<name>". Its values live in the
// guest's memory (the host reads them between hooks), so Get, Set and Add
// cost no host call. A new instance of the policy finds its maps as the last
// one left them.
type Map struct {
	s *mapState
}

type mapState struct {
	name string
	vals []int64
}

// maxTenants bounds a map: the host keeps no value beyond this tenant id.
const maxTenants = 1 << 16

// ErrMapName is OpenMap's answer to a bad name, too many maps (64), or a
// map held by another instance.
var ErrMapName = errors.New("sdk: bad map name (1-64 of a-z 0-9 . _ -), more than 64 maps, or map in use")

// OpenMap opens (creating it if needed, all zero) the map with this name.
func OpenMap(name string) (Map, error) {
	s := &mapState{name: name, vals: make([]int64, 64)}
	for {
		h := host().MapOpen(name, s.vals)
		switch {
		case h >= 0:
			return Map{s: s}, nil
		case h == -1 || -int(h) > maxTenants:
			return Map{}, ErrMapName
		}
		s.vals = make([]int64, -int(h)) // the map holds more values: make room
	}
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

// room makes t's value addressable, moving the array if it must grow; false
// for a tenant id beyond maxTenants.
func (m Map) room(t Tenant) bool {
	s := m.s
	if int(t) < len(s.vals) {
		return true
	}
	if t >= maxTenants {
		return false
	}
	vals := make([]int64, min(max(int(t)+1, 2*len(s.vals)), maxTenants))
	copy(vals, s.vals)
	if host().MapOpen(s.name, vals) < 0 {
		return false
	}
	s.vals = vals
	return true
}

// Get returns t's value.
func (m Map) Get(t Tenant) int64 {
	if int(t) < len(m.s.vals) {
		return m.s.vals[t]
	}
	return 0
}

// Set sets t's value.
func (m Map) Set(t Tenant, v int64) {
	if m.room(t) {
		m.s.vals[t] = v
	}
}

// Add adds d to t's value and returns the sum.
func (m Map) Add(t Tenant, d int64) int64 {
	if !m.room(t) {
		return 0
	}
	m.s.vals[t] += d
	return m.s.vals[t]
}

// Reset zeroes every value.
func (m Map) Reset() { clear(m.s.vals) }

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
	HighClassReserved() bool
	// MapOpen registers vals as the storage of the named map and fills it
	// with the map's values: a handle (>= 0), -1 (refused) or -n (vals
	// must hold n values).
	MapOpen(name string, vals []int64) int32
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

// HighClassReserved reports whether the high class has SMs no other class's
// stream runs on (the daemon's reserve_sms): holding the other classes back
// in slices then buys the high class nothing.
func HighClassReserved() bool { return host().HighClassReserved() }

// Log writes a line to the policy's log (kept by the host, bounded).
func Log(msg string) { host().Log(msg) }
