package shim

import (
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// The CUDA runtime (cudart, linked statically into nvcc-built programs and
// shipped inside PyTorch and CuPy) asks the driver for private tables of
// functions with cuGetExportTable(&table, &uuid). These are the tables the
// runtime of CUDA 13.0 was seen asking for, their layouts, and which slots
// the shim implements; EXPORTTABLES.md says what each slot is for. cmd/libcuda
// generates the C tables from this list (go generate): implemented slots point
// at its functions, the others at stubs that log every call (when tracing)
// and answer with the table's Fill.

// Fill is what an export-table slot the shim does not implement does.
type Fill uint8

const (
	FillNull         Fill = iota // a NULL slot, as the real tables have where unused
	FillSuccess                  // a stub that returns 0 (CUDA_SUCCESS, or a void function)
	FillNotSupported             // a stub that returns CUDA_ERROR_NOT_SUPPORTED
)

// ExportTable is one private table.
type ExportTable struct {
	Name     string   // the C identifier part (cudart_interface)
	UUID     [16]byte // in memory order, as the caller passes it
	Slots    int      // pointer-sized entries, the size word included
	SizeWord bool     // slot 0 holds the table's size in bytes
	Fill     Fill
	Impl     []Slot // implemented slots
	// Words are slots that hold a number, not a function: the size words of
	// the sub-tables that follow the first one in a chained table.
	Words []Word
	// Null are slots that are NULL whatever the Fill, as in the real table.
	Null    []int
	Purpose string
}

// Word is a slot holding a number.
type Word struct {
	Index int
	Value uint64
}

// Slot is an implemented slot: Func is the C symbol cmd/libcuda defines.
type Slot struct {
	Index int
	Func  string
	What  string
}

func uuid(s string) [16]byte {
	var u [16]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 16 {
		panic("bad export table uuid " + s)
	}
	copy(u[:], b)
	return u
}

var exportTables = []ExportTable{
	{Name: "cudart_interface", UUID: uuid("6bd5fb6c5bf4e74a8987d93912fd9df9"), Slots: 13, SizeWord: true, Fill: FillNotSupported,
		Purpose: "runtime interface: modules from the fat binaries nvcc embeds, the primary context",
		Impl: []Slot{
			{1, "gpuosETModuleFromWrapper", "load the module of a __fatBinC_Wrapper_t (CUmodule *, const void *wrapper)"},
			{2, "gpuosETPrimaryContext", "the device's primary context, not retained (CUcontext *, CUdevice)"},
			{6, "gpuosETModuleFromWrapperEx", "slot 1 with three more arguments (CUmodule *, wrapper, void *, void *, unsigned)"},
			{7, "gpuosETCudartFn7", "unknown, one word argument: accepted"},
			{8, "gpuosETModuleFromFatbin", "load the module of a fat binary header (header, CUmodule *, void *, void *, unsigned)"},
			{12, "gpuosETLoadCompilers", "load the JIT compilers: nothing to load"},
		}},
	{Name: "tools_runtime_hooks", UUID: uuid("a094798c2e742e7493f20800200c0a66"), Slots: 7, SizeWord: true, Fill: FillSuccess,
		Purpose: "tools (profiler) runtime callback hooks",
		Impl: []Slot{
			{2, "gpuosETToolsBuffer1", "hand out a buffer the runtime records into (void **, size_t *)"},
			{6, "gpuosETToolsBuffer2", "hand out a second, small buffer (void **, size_t *)"},
		}},
	{Name: "tools_tls", UUID: uuid("42d85a8123f6cb478298f6e78a3aecdc"), Slots: 3, SizeWord: true, Fill: FillNull,
		Purpose: "tools thread-local state: the runtime aborts without the table",
		Impl: []Slot{
			{2, "gpuosETToolsCurrentContext", "the calling thread's current context (CUcontext *): what tools and cuBLASLt key their state by"},
		}},
	{Name: "context_local_storage", UUID: uuid("c693336e1121df11a8c368f355d89593"), Slots: 4, SizeWord: false, Fill: FillNull,
		Purpose: "context-local storage: the runtime keeps its per-context state in the driver's context",
		Impl: []Slot{
			{0, "gpuosETCLSPut", "store a value under a key in a context (NULL: current), with a destructor"},
			{1, "gpuosETCLSDelete", "remove a key from a context"},
			{2, "gpuosETCLSGet", "read a key's value; CUDA_ERROR_INVALID_HANDLE if absent"},
		}},
	{Name: "context_checks", UUID: uuid("263e88607cd2614392f6bbd5006dfa7e"), Slots: 15, SizeWord: true, Fill: FillSuccess,
		Purpose: "context checks: the runtime aborts without the table",
		Impl: []Slot{
			{2, "gpuosETContextCheck", "check a context: writes 0 to its flag output (CUcontext, unsigned *, const void **)"},
			{3, "gpuosETCheckFn3", "returns 0"},
		}},
	{Name: "integrity_check", UUID: uuid("d4082055bde6704b8d34ba123c66e1f2"), Slots: 3, SizeWord: true, Fill: FillNotSupported,
		Purpose: "integrity check: the runtime verifies the driver with a keyed hash (integrity.go)",
		Impl: []Slot{
			{1, "gpuosETIntegrityCheck", "compute the expected 128-bit value (unsigned version, unix seconds, out[2] u64)"},
		}},
	// The real table is a chain of sub-tables, each starting with its size
	// word: 24 bytes at slot 0 (what the first word says), then 16 at 4, 32
	// at 6, 16 at 10 and 56 at 14, NULL in between (as seen under driver 580).
	// A runtime that knows the driver's version reads the later sub-tables at
	// fixed places, so a table of the first 3 slots alone hands it whatever
	// lies after them.
	{Name: "unknown_f8cff951", UUID: uuid("f8cff95121468b4eb9e2fb469e7c0dd9"), Slots: 21, SizeWord: false, Fill: FillNotSupported,
		Purpose: "unknown, chained sub-tables; asked by every runtime program before cuInit",
		Words:   []Word{{0, 24}, {4, 16}, {6, 32}, {10, 16}, {14, 56}},
		Null:    []int{3, 12, 13},
		Impl: []Slot{
			{1, "gpuosETLogMessage", "report a message (domain, severity, printf format, va_list): logged"},
		}},
	{Name: "unknown_21318c60", UUID: uuid("21318c60971432488ca641ff7324c8f2"), Slots: 93, SizeWord: true, Fill: FillNotSupported,
		Purpose: "context and stream identity and more, 93 slots; asked by PyTorch's runtime and cuBLASLt",
		Impl: []Slot{
			{4, "gpuosETContextID", "a context's unique id, as cuCtxGetId (CUcontext, unsigned long long *)"},
			{39, "gpuosETStreamID", "the id of a stream object of slot 51, as cuStreamGetId (CUcontext, stream, unsigned long long *)"},
			{51, "gpuosETStreamOfContext", "the driver's object of a stream, NULL: a default one (CUcontext, CUstream, void **, int perThread)"},
		}},
	{Name: "unknown_69a28e9f", UUID: uuid("69a28e9f24498b47b030c5da330ea4e9"), Slots: 34, SizeWord: true, Fill: FillNotSupported,
		Purpose: "unknown, 34 slots; asked by PyTorch"},
	{Name: "unknown_da9151d3", UUID: uuid("da9151d33ae6cc41a5c04f26d533e328"), Slots: 7, SizeWord: true, Fill: FillNotSupported,
		Purpose: "unknown, 7 slots; asked by CuPy"},
}

// ExportTables returns the tables the shim serves, in the order of their C
// index. The slice is the caller's.
func ExportTables() []ExportTable { return append([]ExportTable(nil), exportTables...) }

// ExportTableIndex returns the index of the table with the given UUID, or -1
// for a table the shim does not serve (the caller answers
// CUDA_ERROR_INVALID_VALUE). Tables named in $GPUOS_SHIM_DENY_TABLES (a
// comma-separated list of table names or UUID prefixes) are refused too, for
// experiments on what the runtime needs; the caller answers those with
// RefusedTableResult.
func (d *Driver) ExportTableIndex(id [16]byte) int {
	hexID := hex.EncodeToString(id[:])
	for i, t := range exportTables {
		if t.UUID != id {
			continue
		}
		if denied(t.Name, hexID) {
			if d.log.Tracing(TraceTables) {
				d.log.Printf("cuGetExportTable(%s): %s refused by GPUOS_SHIM_DENY_TABLES", hexID, t.Name)
			}
			return -1
		}
		if d.log.Tracing(TraceTables) {
			d.log.Printf("cuGetExportTable(%s): %s", hexID, t.Name)
		}
		return i
	}
	d.log.Once("export:"+hexID, "cuGetExportTable(%s): unknown table, returning CUDA_ERROR_INVALID_VALUE", hexID)
	return -1
}

// RefusedTableResult is what cuGetExportTable answers for a table
// $GPUOS_SHIM_DENY_TABLES refuses: $GPUOS_SHIM_DENY_RESULT (a CUresult
// number or name, e.g. 500 or CUDA_ERROR_NOT_FOUND), by default
// CUDA_ERROR_INVALID_VALUE, what it answers for a table it does not know.
func RefusedTableResult() Result {
	v := strings.TrimSpace(os.Getenv("GPUOS_SHIM_DENY_RESULT"))
	if n, err := strconv.ParseUint(v, 10, 32); err == nil && cu.CUresult(n).Name() != "" {
		return cu.CUresult(n)
	}
	for r := cu.CUresult(0); r < 1000; r++ {
		if v != "" && r.Name() == v {
			return r
		}
	}
	return cu.CUDA_ERROR_INVALID_VALUE
}

// Denied reports whether $GPUOS_SHIM_DENY_TABLES refuses the table with this
// UUID.
func Denied(id [16]byte) bool {
	hexID := hex.EncodeToString(id[:])
	for _, t := range exportTables {
		if t.UUID == id {
			return denied(t.Name, hexID)
		}
	}
	return false
}

func denied(name, hexID string) bool { return listed("GPUOS_SHIM_DENY_TABLES", name, hexID) }

// listed reports whether the environment variable's comma-separated list of
// table names and UUID prefixes (or "all") names the table.
func listed(env, name, hexID string) bool {
	for _, s := range strings.Split(os.Getenv(env), ",") {
		s = strings.ToLower(strings.TrimSpace(s))
		if s != "" && (s == name || s == "all" || strings.HasPrefix(hexID, s)) {
			return true
		}
	}
	return false
}

// ExportSlotStub reports a call of a slot the shim does not implement, once
// always and every time when tracing, and returns what the table's Fill says,
// or 0 for tables named in $GPUOS_SHIM_STUB_SUCCESS (names or UUID prefixes,
// for experiments on what the runtime expects of a slot).
func (d *Driver) ExportSlotStub(table, slot int, args [6]uint64) uint64 {
	if table < 0 || table >= len(exportTables) {
		return uint64(cu.CUDA_ERROR_NOT_SUPPORTED)
	}
	t := exportTables[table]
	r := cu.CUDA_ERROR_NOT_SUPPORTED
	if t.Fill == FillSuccess || listed("GPUOS_SHIM_STUB_SUCCESS", t.Name, hex.EncodeToString(t.UUID[:])) {
		r = cu.CUDA_SUCCESS
	}
	if d.log.Tracing(TraceTables) {
		d.log.Printf("export %s slot %d (stub)(%#x %#x %#x %#x %#x %#x) = %s", t.Name, slot, args[0], args[1], args[2], args[3], args[4], args[5], r.Name())
	} else {
		d.log.Once(fmt.Sprintf("slot:%s:%d", t.Name, slot), "export table %s: unimplemented slot %d called (GPUOS_SHIM_TRACE=1 shows its arguments)", t.Name, slot)
	}
	return uint64(r)
}

// TraceSlot logs a call of an implemented slot with its arguments and result,
// when tracing.
func (d *Driver) TraceSlot(name string, r Result, args ...uint64) {
	if !d.log.Tracing(TraceTables) {
		return
	}
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%#x", a)
	}
	d.log.Printf("export %s(%s) = %s", name, b.String(), r.Name())
}

// ---- the runtime interface's module loaders -------------------------------------

// ModuleFromImage loads the module at addr (a fat binary wrapper, fat binary,
// cubin or PTX) in the current context: the runtime interface's slots 1, 6 and 8.
func (d *Driver) ModuleFromImage(t Thread, addr uintptr) (uint64, Result) {
	m, r := d.loadImage(t, addr, "cudart module")
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return m.h, cu.CUDA_SUCCESS
}
