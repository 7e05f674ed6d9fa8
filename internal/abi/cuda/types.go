package cuda

// CUdevice is a device ordinal (C int).
type CUdevice int32

// CUdeviceptr is a device address (C unsigned long long).
type CUdeviceptr uint64

// CUmemGenericAllocationHandle names physical memory made by cuMemCreate (C unsigned long
// long).
type CUmemGenericAllocationHandle uint64

// Opaque handles: in C each is a pointer to an incomplete struct; here it is its address.
type (
	CUcontext         uint64 // struct CUctx_st *
	CUmodule          uint64 // struct CUmod_st *
	CUfunction        uint64 // struct CUfunc_st *
	CUlibrary         uint64 // struct CUlib_st *
	CUkernel          uint64 // struct CUkern_st *
	CUarray           uint64 // struct CUarray_st *
	CUstream          uint64 // struct CUstream_st *
	CUevent           uint64 // struct CUevent_st *
	CUgraph           uint64 // struct CUgraph_st *
	CUgraphNode       uint64 // struct CUgraphNode_st *
	CUgraphExec       uint64 // struct CUgraphExec_st *
	CUmemoryPool      uint64 // struct CUmemPoolHandle_st *
	CUgraphDeviceNode uint64 // struct CUgraphDeviceUpdatableNode_st *
)

// MaxDeviceAttribute is one past the largest CUdevice_attribute of CUDA 13.0: the driver
// answers CUDA_ERROR_INVALID_VALUE for this value and above.
const MaxDeviceAttribute = CU_DEVICE_ATTRIBUTE_MAX

// ConstantKind says how a [Constant] is spelled in C.
type ConstantKind uint8

// Kinds of constants.
const (
	KindEnum    ConstantKind = iota + 1 // an enumerator of a C enum
	KindMacro                           // an integer #define
	KindPointer                         // a pointer-valued #define such as ((CUstream)0x1)
)

// Constant is one named value of the ABI.
type Constant struct {
	Name  string
	Type  string // the C type: an enum typedef, the pointer's type, or "" for a plain integer macro
	Kind  ConstantKind
	Value int64 // for KindPointer, the address
	Alias bool  // an earlier name of the same type has the same value
}

// EnumType is one C enum the package mirrors.
type EnumType struct {
	Name   string // typedef name, also the Go type name (CUresult)
	Tag    string // enum tag (cudaError_enum)
	Signed bool   // has a negative enumerator, so C gives it type int
}

// Stream says which default-stream semantics a symbol implements.
type Stream uint8

// Stream variants of an exported symbol.
const (
	StreamNone   Stream = iota // cuGetProcAddress never hands the symbol out
	StreamLegacy               // the default: the legacy default stream
	StreamPTDS                 // _ptds: per-thread default stream, for calls without a stream argument
	StreamPTSZ                 // _ptsz: per-thread default stream, for calls with a stream argument
)

// Symbol is one function libcuda.so.1 exports.
type Symbol struct {
	Name    string // the exported symbol (cuMemAlloc_v2)
	API     string // the base name cuGetProcAddress knows it by (cuMemAlloc); "" if none
	Since   int    // the CUDA version (1000*major + 10*minor) from which API resolves to Name
	Stream  Stream
	Returns string // the C return type ("CUresult"); "" where not known
}

// Constants returns every constant the package mirrors, in the order of cuda.h. The slice
// is the caller's.
func Constants() []Constant {
	return append([]Constant(nil), constants[:]...)
}

// EnumTypes returns the C enums the package mirrors. The slice is the caller's.
func EnumTypes() []EnumType {
	return append([]EnumType(nil), enumTypes[:]...)
}

// Symbols returns every function symbol the CUDA 13.0 driver (580) exports, sorted by
// name: the drop-in libcuda.so.1 exports each of them. The slice is the caller's.
func Symbols() []Symbol {
	return append([]Symbol(nil), symbols[:]...)
}

// DataSymbols returns the data objects the driver exports (the cudbg* variables a debugger
// reads), sorted. They are not functions and cuGetProcAddress never returns them. The
// slice is the caller's.
func DataSymbols() []string {
	return append([]string(nil), dataSymbols[:]...)
}
