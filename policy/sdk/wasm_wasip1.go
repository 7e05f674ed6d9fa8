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

//go:wasmimport gpuos high_class_reserved
func hostHighClassReserved() int32

//go:wasmimport gpuos map_open
func hostMapOpen(name string, vals *int64, n uint32) int32

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
func (wasmHost) HighClassReserved() bool           { return hostHighClassReserved() != 0 }
func (wasmHost) MapOpen(name string, vals []int64) int32 {
	return hostMapOpen(name, &vals[0], uint32(len(vals)))
}
func (wasmHost) Log(msg string) { hostLog(msg) }

// The ABI's exports.

//go:wasmexport gpuos_abi_version
func exportABIVersion() int32 { return ABIVersion }

//go:wasmexport gpuos_hooks
func exportHooks() int64 { return int64(hooks) }

//go:wasmexport gpuos_exchange
func exportExchange(size int32) *byte { return &exchangeArea(size)[0] }

//go:wasmexport gpuos_init
func exportInit() int32 {
	if onInit != nil {
		return result(onInit())
	}
	return 0
}

//go:wasmexport gpuos_on_session_open
func exportSessionOpen(tenant uint32, session uint64, pid, class int32) int32 {
	if onSessionOpen != nil {
		return admit(onSessionOpen(SessionEvent{Tenant(tenant), session, pid, Class(class)}))
	}
	return 0
}

//go:wasmexport gpuos_on_submit
func exportSubmit(tenant, engine uint32, session uint64, cost int64, queued, inFlight uint32) int32 {
	if onSubmit != nil {
		return result(onSubmit(SubmitEvent{Tenant(tenant), Engine(engine), session, cost, int(queued), int(inFlight)}))
	}
	return 0
}

//go:wasmexport gpuos_on_dispatch
func exportDispatch(engine, ready, n uint32) uint64 { return dispatch(Engine(engine), n) }

//go:wasmexport gpuos_on_complete
func exportComplete(tenant, engine, commands uint32, charge, estimate int64, failed uint32, weight int64) int32 {
	if onComplete != nil {
		return result(onComplete(CompleteEvent{Tenant(tenant), Engine(engine), int(commands), charge, estimate, failed != 0, weight}))
	}
	return 0
}

//go:wasmexport gpuos_on_preempt
func exportPreempt(tenant, engine, remaining, by uint32) int32 {
	if onPreempt != nil {
		return result(onPreempt(PreemptEvent{Tenant(tenant), Engine(engine), remaining, Tenant(by)}))
	}
	return 0
}

//go:wasmexport gpuos_on_tick
func exportTick(now int64) int32 {
	if onTick != nil {
		return result(onTick(time.Duration(now)))
	}
	return 0
}

//go:wasmexport gpuos_on_alloc
func exportAlloc(tenant uint32, bytes, used, quota uint64) int32 {
	if onAlloc != nil {
		return admit(onAlloc(AllocEvent{Tenant(tenant), bytes, used, quota}))
	}
	return 0
}

//go:wasmexport gpuos_on_pressure
func exportPressure(need uint64, tenant uint32, window uint64, flags, cands, n, out uint32) int32 {
	return pressure(Pressure{Need: need, Tenant: Tenant(tenant), Window: window, SwapIn: flags&1 != 0}, n)
}

//go:wasmexport gpuos_on_fault
func exportFault(tenant uint32, session uint64, kind uint32) int32 {
	if onFault != nil {
		return result(onFault(FaultEvent{Tenant(tenant), session, kind}))
	}
	return 0
}
