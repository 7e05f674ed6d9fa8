package policytest

// ExchangeAddr is where the canned guests keep their exchange area.
const ExchangeAddr = 1 << 16

// MemoryPages is the canned guests' memory: 2 MiB, room for the largest
// exchange area the host asks for.
const MemoryPages = 32

// Base returns a module with memory and the exports every policy needs:
// gpuos_abi_version returning version, and gpuos_exchange returning
// ExchangeAddr. Add hooks to its Funcs.
func Base(version int32) *Module {
	return &Module{
		MemoryPages:  MemoryPages,
		ExportMemory: true,
		Funcs: []Func{
			{Results: []byte{I32}, Code: I32Const(version), Export: "gpuos_abi_version"},
			{Params: []byte{I32}, Results: []byte{I32}, Code: I32Const(ExchangeAddr), Export: "gpuos_exchange"},
		},
	}
}

// Dispatch is the signature of gpuos_on_dispatch: (engine, ready, n) -> i64.
func Dispatch(code []byte) Func {
	return Func{Params: []byte{I32, I32, I32}, Results: []byte{I64}, Code: code, Export: "gpuos_on_dispatch"}
}

// Notify is a notification hook that returns 0.
func Notify(export string, params ...byte) Func {
	return Func{Params: params, Results: []byte{I32}, Code: I32Const(0), Export: export}
}

// FirstReady dispatches the first ready tenant (the lowest id), or nothing
// when none is ready; its other hooks do nothing.
func FirstReady() []byte {
	m := Base(1)
	m.Funcs = append(m.Funcs,
		Dispatch(Code(
			// if n == 0: return NoTenant
			LocalGet(2), I32Eqz, []byte{0x04, 0x40}, I64Const(0xffffffff), Return, End,
			LocalGet(1), I32Load(0), I64ExtendU,
		)),
		Notify("gpuos_on_submit", I32, I32, I64, I64, I32, I32),
		Notify("gpuos_on_complete", I32, I32, I32, I64, I64, I32, I64),
		Notify("gpuos_on_tick", I64),
	)
	return m.Bytes()
}

// Choose dispatches tenant t whatever is ready, and holds for hold ns.
func Choose(t uint32, hold uint32) []byte {
	m := Base(1)
	m.Funcs = append(m.Funcs, Dispatch(I64Const(int64(uint64(hold)<<32|uint64(t)))))
	return m.Bytes()
}

// Spin loops forever in on_dispatch.
func Spin() []byte {
	m := Base(1)
	m.Funcs = append(m.Funcs, Dispatch(Code(Loop, Br(0), End, I64Const(0))))
	return m.Bytes()
}

// SpinRecursive never loops: on_dispatch calls a function that calls itself
// twice (2^60 calls before it would return), so only the function-entry
// check sites can stop it.
func SpinRecursive() []byte {
	m := Base(1)
	self := uint32(len(m.Funcs)) // index of the recursive function
	m.Funcs = append(m.Funcs,
		Func{Params: []byte{I32}, Code: Code(
			LocalGet(0), I32Eqz, BrIf(0),
			LocalGet(0), I32Const(1), I32Sub, Call(self),
			LocalGet(0), I32Const(1), I32Sub, Call(self),
		)},
		Dispatch(Code(I32Const(60), Call(self), I64Const(0xffffffff))),
	)
	return m.Bytes()
}

// Grow grows its memory by 16 pages at a time, forever, in on_dispatch.
func Grow() []byte {
	m := Base(1)
	m.Funcs = append(m.Funcs, Dispatch(Code(Loop, I32Const(16), MemoryGrow, Drop, Br(0), End, I64Const(0))))
	return m.Bytes()
}

// Trap executes unreachable in on_dispatch.
func Trap() []byte {
	m := Base(1)
	m.Funcs = append(m.Funcs, Dispatch(Code(Unreachable, I64Const(0))))
	return m.Bytes()
}

// WithImport is FirstReady's dispatch plus an import the allowlist may refuse.
func WithImport(module, name string, params, results []byte) []byte {
	m := Base(1)
	m.Imports = []Import{{Module: module, Name: name, Params: params, Results: results}}
	m.Funcs = append(m.Funcs, Dispatch(Code(LocalGet(1), I32Load(0), I64ExtendU)))
	return m.Bytes()
}

// Counter counts completions per tenant in the map "completions", kept in
// its memory at address 2048 (64 tenants), and dispatches the first ready
// tenant.
func Counter() []byte {
	m := Base(1)
	const nameAt, valsAt = 1024, 2048
	mapName := "completions"
	m.Data = []Data{{Offset: nameAt, Bytes: []byte(mapName)}}
	m.Imports = []Import{
		{Module: "gpuos", Name: "map_open", Params: []byte{I32, I32, I32, I32}, Results: []byte{I32}},
	}
	m.Funcs = append(m.Funcs,
		Dispatch(Code(
			LocalGet(2), I32Eqz, []byte{0x04, 0x40}, I64Const(0xffffffff), Return, End,
			LocalGet(1), I32Load(0), I64ExtendU,
		)),
		Func{Params: []byte{I32, I32, I32, I64, I64, I32, I64}, Results: []byte{I32}, Export: "gpuos_on_complete", Code: Code(
			// map_open("completions", vals, 64): re-opening by the holder is allowed
			I32Const(nameAt), I32Const(int32(len(mapName))), I32Const(valsAt), I32Const(64), Call(0), Drop,
			// vals[tenant] += commands
			LocalGet(0), I32Const(3), I32Shl, // address offset 8*tenant
			LocalGet(0), I32Const(3), I32Shl, I64Load(valsAt),
			LocalGet(2), I64ExtendU, I64Add,
			I64Store(valsAt),
			I32Const(0),
		)},
	)
	return m.Bytes()
}

// InOrder is a memory policy: on_pressure names every candidate, in the
// order offered (least recently used first).
func InOrder() []byte {
	m := Base(1)
	// locals: 7 params, then i (7)
	m.Funcs = append(m.Funcs, Func{
		Params: []byte{I64, I32, I64, I32, I32, I32, I32}, Results: []byte{I32}, Locals: []byte{I32},
		Export: "gpuos_on_pressure",
		Code: Code(
			Block, Loop,
			LocalGet(7), LocalGet(5), I32GeU, BrIf(1), // i >= n: done
			LocalGet(6), LocalGet(7), I32Const(2), I32Shl, I32Add, // out + 4*i
			LocalGet(7), I32Store(0), // = i
			LocalGet(7), I32Const(1), I32Add, LocalSet(7),
			Br(0), End, End,
			LocalGet(5),
		),
	})
	return m.Bytes()
}
