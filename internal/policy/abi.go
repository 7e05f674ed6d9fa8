package policy

import "github.com/tetratelabs/wazero/api"

// ABIVersion is the version of the hook ABI this host speaks. A guest's
// gpuos_abi_version export must return it. Version 1 is described in
// docs/policies.md; later versions only add hooks and host functions, and a
// host keeps accepting guests of every version it knows.
const ABIVersion = 1

// ModuleName is the import module of every host function of the ABI.
const ModuleName = "gpuos"

// Hook is one hook point of the ABI.
type Hook uint8

// Hooks, in ABI bit order (bit i of gpuos_hooks is Hook i).
const (
	HookInit Hook = iota
	HookSessionOpen
	HookSubmit
	HookDispatch
	HookComplete
	HookPreempt
	HookTick
	HookAlloc
	HookPressure
	HookFault
	numHooks
)

// hookDef is a hook's export name and wasm signature.
type hookDef struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// hookDefs are the guest exports of ABI version 1.
var hookDefs = [numHooks]hookDef{
	HookInit:        {"gpuos_init", nil, []api.ValueType{i32}},
	HookSessionOpen: {"gpuos_on_session_open", []api.ValueType{i32, i64, i32, i32}, []api.ValueType{i32}},
	HookSubmit:      {"gpuos_on_submit", []api.ValueType{i32, i32, i64, i64, i32, i32}, []api.ValueType{i32}},
	HookDispatch:    {"gpuos_on_dispatch", []api.ValueType{i32, i32, i32}, []api.ValueType{i64}},
	HookComplete:    {"gpuos_on_complete", []api.ValueType{i32, i32, i32, i64, i64, i32, i64}, []api.ValueType{i32}},
	HookPreempt:     {"gpuos_on_preempt", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}},
	HookTick:        {"gpuos_on_tick", []api.ValueType{i64}, []api.ValueType{i32}},
	HookAlloc:       {"gpuos_on_alloc", []api.ValueType{i32, i64, i64, i64}, []api.ValueType{i32}},
	HookPressure:    {"gpuos_on_pressure", []api.ValueType{i64, i32, i64, i32, i32, i32, i32}, []api.ValueType{i32}},
	HookFault:       {"gpuos_on_fault", []api.ValueType{i32, i64, i32}, []api.ValueType{i32}},
}

// Flags a guest may set in the high half of gpuos_hooks, to be called less.
const (
	// FlagSubmitIdleOnly: call on_submit only when the command finds its
	// tenant idle on the engine (queued 1, in flight 0).
	FlagSubmitIdleOnly = 1 << 32
	// FlagWorkConserving: when exactly one tenant is ready, dispatch it
	// without calling on_dispatch.
	FlagWorkConserving = 1 << 33
)

// String returns the hook's ABI name without the gpuos_ prefix.
func (h Hook) String() string {
	if h < numHooks {
		return hookDefs[h].name[len("gpuos_"):]
	}
	return "hook(?)"
}

// Other guest exports of ABI version 1.
const (
	exportVersion    = "gpuos_abi_version" // () -> i32: ABIVersion (required)
	exportHooks      = "gpuos_hooks"       // () -> i64: bit set of implemented hooks (optional)
	exportExchange   = "gpuos_exchange"    // (size i32) -> i32: address of an exchange area of size bytes
	exportInitialize = "_initialize"       // WASI reactor initialization (optional)
	exportFuel       = "__gpuos_fuel"      // added by the instrumentation pass
)

// Return values of hooks.
const (
	// ResultOK is what a notification hook returns when it succeeded; any
	// other value reports a failure of the policy, which ejects it.
	ResultOK = 0
	// Admit and Refuse are on_session_open's and on_alloc's answers.
	Admit  = 0
	Refuse = 1
	// NoTenant in the low half of on_dispatch's result dispatches nothing.
	NoTenant = 0xffffffff
)

// Candidate flags of on_pressure's records.
const (
	CandidateShared = 1 << 0 // the chunk is mapped in other sessions too
	CandidateSlab   = 1 << 1 // the chunk holds several small allocations
)

// PressureSwapIn is on_pressure's flag that the request makes the
// requester's window resident (its own chunks are then not offered).
const PressureSwapIn = 1 << 0

// Sizes of the records the host writes into the exchange area.
const (
	// on_dispatch's record, one per ready tenant: u32 tenant, u32 queued,
	// u32 in_flight, i32 class, i64 weight, i64 in_flight_cost, i64
	// head_cost, u64 head_seq, i64 usage (all of the dispatch's engine).
	readyRecordSize = 56
	// on_pressure's record: u32 tenant, i32 priority, u32 flags, u32 zero,
	// u64 bytes, u64 last_use, u64 window.
	candidateSize = 40
	// defaultExchange is the exchange area the host asks for at
	// instantiation: enough for 804 ready tenants or 1024 candidates with
	// their answer.
	defaultExchange = 44 << 10
	maxExchange     = 1 << 20
)

// Fault kinds of on_fault.
const (
	FaultGuard  = 1 // a guarded kernel tried to leave its window
	FaultDevice = 2 // the device context was lost
	FaultLaunch = 3 // a kernel failed on the device
)

// hostFunc describes one host function of the ABI, for the import check.
type hostFunc struct {
	params, results []api.ValueType
}

// hostFuncs are the host functions of ABI version 1, module "gpuos".
var hostFuncs = map[string]hostFunc{
	"now":                 {nil, []api.ValueType{i64}},
	"num_tenants":         {nil, []api.ValueType{i32}},
	"tenant_name":         {[]api.ValueType{i32, i32, i32}, []api.ValueType{i32}},
	"tenant_class":        {[]api.ValueType{i32}, []api.ValueType{i32}},
	"tenant_weight":       {[]api.ValueType{i32, i32}, []api.ValueType{i64}},
	"tenant_memory_share": {[]api.ValueType{i32}, []api.ValueType{i64}},
	"tenant_sessions":     {[]api.ValueType{i32}, []api.ValueType{i32}},
	"queued":              {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"in_flight":           {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"usage":               {[]api.ValueType{i32, i32}, []api.ValueType{i64}},
	"head_cost":           {[]api.ValueType{i32, i32}, []api.ValueType{i64}},
	"head_seq":            {[]api.ValueType{i32, i32}, []api.ValueType{i64}},
	"engine_in_flight":    {[]api.ValueType{i32}, []api.ValueType{i32}},
	"slice_target":        {nil, []api.ValueType{i64}},
	"high_class_reserved": {nil, []api.ValueType{i32}},
	"map_open":            {[]api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}},
	"in_flight_cost":      {[]api.ValueType{i32, i32}, []api.ValueType{i64}},
	"log":                 {[]api.ValueType{i32, i32}, nil},
}

// Limits of the map host functions.
const (
	maxMaps       = 64
	maxMapNameLen = 64
	maxLogLine    = 512
)
