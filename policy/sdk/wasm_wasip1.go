package sdk

import "time"

// The ABI's host functions, module "gpuos".

//go:wasmimport gpuos now
func hostNow() int64

//go:wasmimport gpuos num_tenants
func hostNumTenants() int32

//go:wasmimport gpuos tenant_name
func hostTenantName(t uint32, buf *byte, n uint32) uint32

//go:wasmimport gpuos tenant_class
func hostTenantClass(t uint32) int32

//go:wasmimport gpuos tenant_weight
func hostTenantWeight(t, e uint32) int64

//go:wasmimport gpuos tenant_memory_share
func hostTenantMemoryShare(t uint32) int64

//go:wasmimport gpuos tenant_sessions
func hostTenantSessions(t uint32) int32

//go:wasmimport gpuos queued
func hostQueued(t, e uint32) int32

//go:wasmimport gpuos in_flight
func hostInFlight(t, e uint32) int32

//go:wasmimport gpuos in_flight_cost
func hostInFlightCost(t, e uint32) int64

//go:wasmimport gpuos usage
func hostUsage(t, e uint32) int64

//go:wasmimport gpuos head_cost
func hostHeadCost(t, e uint32) int64

//go:wasmimport gpuos head_seq
func hostHeadSeq(t, e uint32) int64

//go:wasmimport gpuos engine_in_flight
func hostEngineInFlight(e uint32) int32

//go:wasmimport gpuos slice_target
func hostSliceTarget() int64

//go:wasmimport gpuos map_open
func hostMapOpen(name string) int32

//go:wasmimport gpuos map_get
func hostMapGet(h int32, t uint32) int64

//go:wasmimport gpuos map_set
func hostMapSet(h int32, t uint32, v int64)

//go:wasmimport gpuos map_add
func hostMapAdd(h int32, t uint32, d int64) int64

//go:wasmimport gpuos map_reset
func hostMapReset(h int32)

//go:wasmimport gpuos log
func hostLog(msg string)

type wasmHost struct{}

func host() wasmHost { return wasmHost{} }

func (wasmHost) Now() time.Duration { return time.Duration(hostNow()) }
func (wasmHost) NumTenants() int    { return int(hostNumTenants()) }
func (wasmHost) TenantName(t Tenant) string {
	var buf [64]byte
	n := hostTenantName(uint32(t), &buf[0], uint32(len(buf)))
	if n == 0xffffffff {
		return ""
	}
	if int(n) > len(buf) {
		long := make([]byte, n)
		hostTenantName(uint32(t), &long[0], n)
		return string(long)
	}
	return string(buf[:n])
}
func (wasmHost) Class(t Tenant) Class            { return Class(hostTenantClass(uint32(t))) }
func (wasmHost) Weight(t Tenant, e Engine) int64 { return hostTenantWeight(uint32(t), uint32(e)) }
func (wasmHost) MemoryShare(t Tenant) uint64     { return uint64(hostTenantMemoryShare(uint32(t))) }
func (wasmHost) Sessions(t Tenant) int           { return int(hostTenantSessions(uint32(t))) }
func (wasmHost) Queued(t Tenant, e Engine) int   { return int(hostQueued(uint32(t), uint32(e))) }
func (wasmHost) InFlight(t Tenant, e Engine) int { return int(hostInFlight(uint32(t), uint32(e))) }
func (wasmHost) InFlightCost(t Tenant, e Engine) int64 {
	return hostInFlightCost(uint32(t), uint32(e))
}
func (wasmHost) Usage(t Tenant, e Engine) int64    { return hostUsage(uint32(t), uint32(e)) }
func (wasmHost) HeadCost(t Tenant, e Engine) int64 { return hostHeadCost(uint32(t), uint32(e)) }
func (wasmHost) HeadSeq(t Tenant, e Engine) uint64 { return uint64(hostHeadSeq(uint32(t), uint32(e))) }
func (wasmHost) EngineInFlight(e Engine) int       { return int(hostEngineInFlight(uint32(e))) }
func (wasmHost) SliceTarget() time.Duration        { return time.Duration(hostSliceTarget()) }
func (wasmHost) MapOpen(name string) int32         { return hostMapOpen(name) }
func (wasmHost) MapGet(h int32, t Tenant) int64    { return hostMapGet(h, uint32(t)) }
func (wasmHost) MapSet(h int32, t Tenant, v int64) { hostMapSet(h, uint32(t), v) }
func (wasmHost) MapAdd(h int32, t Tenant, d int64) int64 {
	return hostMapAdd(h, uint32(t), d)
}
func (wasmHost) MapReset(h int32) { hostMapReset(h) }
func (wasmHost) Log(msg string)   { hostLog(msg) }

// The ABI's exports.

//go:wasmexport gpuos_abi_version
func exportABIVersion() int32 { return ABIVersion }

//go:wasmexport gpuos_hooks
func exportHooks() int64 { return int64(hooks) }

//go:wasmexport gpuos_exchange
func exportExchange(size int32) *byte { return &exchangeArea(size)[0] }

//go:wasmexport gpuos_init
func exportInit() int32 {
	if p, ok := registered.(Initializer); ok {
		return result(p.Init())
	}
	return 0
}

//go:wasmexport gpuos_on_session_open
func exportSessionOpen(tenant uint32, session uint64, pid, class int32) int32 {
	if p, ok := registered.(SessionOpener); ok {
		return admit(p.OnSessionOpen(SessionEvent{Tenant(tenant), session, pid, Class(class)}))
	}
	return 0
}

//go:wasmexport gpuos_on_submit
func exportSubmit(tenant, engine uint32, session uint64, cost int64) int32 {
	if p, ok := registered.(Submitter); ok {
		return result(p.OnSubmit(SubmitEvent{Tenant(tenant), Engine(engine), session, cost}))
	}
	return 0
}

//go:wasmexport gpuos_on_dispatch
func exportDispatch(engine, ready, n uint32) uint64 { return dispatch(Engine(engine), n) }

//go:wasmexport gpuos_on_complete
func exportComplete(tenant, engine, commands uint32, charge, estimate int64, failed uint32) int32 {
	if p, ok := registered.(Completer); ok {
		return result(p.OnComplete(CompleteEvent{Tenant(tenant), Engine(engine), int(commands), charge, estimate, failed != 0}))
	}
	return 0
}

//go:wasmexport gpuos_on_preempt
func exportPreempt(tenant, engine, remaining, by uint32) int32 {
	if p, ok := registered.(Preempter); ok {
		return result(p.OnPreempt(PreemptEvent{Tenant(tenant), Engine(engine), remaining, Tenant(by)}))
	}
	return 0
}

//go:wasmexport gpuos_on_tick
func exportTick(now int64) int32 {
	if p, ok := registered.(Ticker); ok {
		return result(p.OnTick(time.Duration(now)))
	}
	return 0
}

//go:wasmexport gpuos_on_alloc
func exportAlloc(tenant uint32, bytes, used, quota uint64) int32 {
	if p, ok := registered.(AllocChecker); ok {
		return admit(p.OnAlloc(AllocEvent{Tenant(tenant), bytes, used, quota}))
	}
	return 0
}

//go:wasmexport gpuos_on_pressure
func exportPressure(need uint64, tenant uint32, window uint64, flags, cands, n, out uint32) int32 {
	return pressure(Pressure{Need: need, Tenant: Tenant(tenant), Window: window, SwapIn: flags&1 != 0}, n)
}

//go:wasmexport gpuos_on_fault
func exportFault(tenant uint32, session uint64, kind uint32) int32 {
	if p, ok := registered.(FaultHandler); ok {
		return result(p.OnFault(FaultEvent{Tenant(tenant), session, kind}))
	}
	return 0
}
