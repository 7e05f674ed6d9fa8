package cuda

// Structures the supported driver calls take, laid out byte for byte as the C structs on
// 64-bit Linux. Padding the C compiler inserts is spelled out as blank fields, so the Go
// layout needs no alignment rule: every field sits at the offset in its comment, which
// [Layouts] records and the tests check against include/cuda.h (and internal/verify
// against NVIDIA's cuda.h).

// CUuuid mirrors CUuuid (struct CUuuid_st): 16 bytes.
type CUuuid struct {
	Bytes [16]byte // 0
}

// Sizes of the mirrored structures in bytes.
const (
	SizeofCUuuid                            = 16
	SizeofCUipcMemHandle                    = 64
	SizeofCUipcEventHandle                  = 64
	SizeofCUdevprop                         = 56
	SizeofCUDA_MEMCPY2D                     = 128
	SizeofCUDA_MEMCPY3D                     = 200
	SizeofCUmemLocation                     = 8
	SizeofCUmemAccessDesc                   = 12
	SizeofCUmemAllocationProp               = 32
	SizeofCUmemPoolProps                    = 88
	SizeofCUaccessPolicyWindow              = 32
	SizeofCUlaunchAttributeValue            = 64
	SizeofCUlaunchAttribute                 = 72
	SizeofCUlaunchConfig                    = 56
	SizeofCUDA_POINTER_ATTRIBUTE_P2P_TOKENS = 16
	SizeofCUctxCigParam                     = 16
	SizeofCUctxCreateParams                 = 24
)

// CUipcMemHandle mirrors CUipcMemHandle (struct CUipcMemHandle_st): CU_IPC_HANDLE_SIZE
// opaque bytes.
type CUipcMemHandle struct {
	Reserved [CU_IPC_HANDLE_SIZE]byte // 0
}

// CUipcEventHandle mirrors CUipcEventHandle (struct CUipcEventHandle_st).
type CUipcEventHandle struct {
	Reserved [CU_IPC_HANDLE_SIZE]byte // 0
}

// CUdevprop mirrors the legacy CUdevprop (struct CUdevprop_st) of cuDeviceGetProperties.
type CUdevprop struct {
	MaxThreadsPerBlock  int32    // 0
	MaxThreadsDim       [3]int32 // 4
	MaxGridSize         [3]int32 // 16
	SharedMemPerBlock   int32    // 28
	TotalConstantMemory int32    // 32
	SIMDWidth           int32    // 36
	MemPitch            int32    // 40
	RegsPerBlock        int32    // 44
	ClockRate           int32    // 48
	TextureAlign        int32    // 52
}

// CUDA_MEMCPY2D mirrors CUDA_MEMCPY2D (struct CUDA_MEMCPY2D_st) of cuMemcpy2D*.
type CUDA_MEMCPY2D struct {
	SrcXInBytes   uint64       // 0
	SrcY          uint64       // 8
	SrcMemoryType CUmemorytype // 16
	_             [4]byte      // 20
	SrcHost       uint64       // 24: const void *
	SrcDevice     CUdeviceptr  // 32
	SrcArray      CUarray      // 40
	SrcPitch      uint64       // 48
	DstXInBytes   uint64       // 56
	DstY          uint64       // 64
	DstMemoryType CUmemorytype // 72
	_             [4]byte      // 76
	DstHost       uint64       // 80: void *
	DstDevice     CUdeviceptr  // 88
	DstArray      CUarray      // 96
	DstPitch      uint64       // 104
	WidthInBytes  uint64       // 112
	Height        uint64       // 120
}

// CUDA_MEMCPY3D mirrors CUDA_MEMCPY3D (struct CUDA_MEMCPY3D_st) of cuMemcpy3D*.
type CUDA_MEMCPY3D struct {
	SrcXInBytes   uint64       // 0
	SrcY          uint64       // 8
	SrcZ          uint64       // 16
	SrcLOD        uint64       // 24
	SrcMemoryType CUmemorytype // 32
	_             [4]byte      // 36
	SrcHost       uint64       // 40: const void *
	SrcDevice     CUdeviceptr  // 48
	SrcArray      CUarray      // 56
	Reserved0     uint64       // 64: void *, must be NULL
	SrcPitch      uint64       // 72
	SrcHeight     uint64       // 80
	DstXInBytes   uint64       // 88
	DstY          uint64       // 96
	DstZ          uint64       // 104
	DstLOD        uint64       // 112
	DstMemoryType CUmemorytype // 120
	_             [4]byte      // 124
	DstHost       uint64       // 128: void *
	DstDevice     CUdeviceptr  // 136
	DstArray      CUarray      // 144
	Reserved1     uint64       // 152: void *, must be NULL
	DstPitch      uint64       // 160
	DstHeight     uint64       // 168
	WidthInBytes  uint64       // 176
	Height        uint64       // 184
	Depth         uint64       // 192
}

// CUmemLocation mirrors CUmemLocation (struct CUmemLocation_st).
type CUmemLocation struct {
	Type CUmemLocationType // 0
	ID   int32             // 4: device ordinal or NUMA node
}

// CUmemAccessDesc mirrors CUmemAccessDesc (struct CUmemAccessDesc_st) of cuMemSetAccess.
type CUmemAccessDesc struct {
	Location CUmemLocation     // 0
	Flags    CUmemAccess_flags // 8
}

// CUmemAllocationPropFlags is the allocFlags member of CUmemAllocationProp.
type CUmemAllocationPropFlags struct {
	CompressionType      uint8   // 0 (24 in CUmemAllocationProp)
	GpuDirectRDMACapable uint8   // 1
	Usage                uint16  // 2
	Reserved             [4]byte // 4
}

// CUmemAllocationProp mirrors CUmemAllocationProp (struct CUmemAllocationProp_st) of
// cuMemCreate and cuMemGetAllocationGranularity.
type CUmemAllocationProp struct {
	Type                 CUmemAllocationType       // 0
	RequestedHandleTypes CUmemAllocationHandleType // 4
	Location             CUmemLocation             // 8
	Win32HandleMetaData  uint64                    // 16: void *
	AllocFlags           CUmemAllocationPropFlags  // 24
}

// CUmemPoolProps mirrors CUmemPoolProps (struct CUmemPoolProps_st) of cuMemPoolCreate.
type CUmemPoolProps struct {
	AllocType               CUmemAllocationType       // 0
	HandleTypes             CUmemAllocationHandleType // 4
	Location                CUmemLocation             // 8
	Win32SecurityAttributes uint64                    // 16: void *
	MaxSize                 uint64                    // 24: size_t
	Usage                   uint16                    // 32
	Reserved                [54]byte                  // 34
}

// CUaccessPolicyWindow mirrors CUaccessPolicyWindow (struct CUaccessPolicyWindow_st).
type CUaccessPolicyWindow struct {
	BasePtr  uint64           // 0: void *
	NumBytes uint64           // 8: size_t
	HitRatio float32          // 16
	HitProp  CUaccessProperty // 20
	MissProp CUaccessProperty // 24
	_        [4]byte          // 28
}

// CUlaunchAttributeValue mirrors the 64-byte union CUlaunchAttributeValue (union
// CUlaunchAttributeValue_union). Which member is live depends on the attribute's ID; the
// member offsets are in [Layouts]. In C the union is 8-byte aligned.
type CUlaunchAttributeValue [SizeofCUlaunchAttributeValue]byte

// CUlaunchAttribute mirrors CUlaunchAttribute (struct CUlaunchAttribute_st).
type CUlaunchAttribute struct {
	ID    CUlaunchAttributeID    // 0
	Pad   [4]byte                // 4
	Value CUlaunchAttributeValue // 8
}

// CUlaunchConfig mirrors CUlaunchConfig (struct CUlaunchConfig_st) of cuLaunchKernelEx.
type CUlaunchConfig struct {
	GridDimX       uint32   // 0
	GridDimY       uint32   // 4
	GridDimZ       uint32   // 8
	BlockDimX      uint32   // 12
	BlockDimY      uint32   // 16
	BlockDimZ      uint32   // 20
	SharedMemBytes uint32   // 24
	_              [4]byte  // 28
	HStream        CUstream // 32
	Attrs          uint64   // 40: CUlaunchAttribute *
	NumAttrs       uint32   // 48
	_              [4]byte  // 52
}

// CUDA_POINTER_ATTRIBUTE_P2P_TOKENS mirrors the struct of CU_POINTER_ATTRIBUTE_P2P_TOKENS.
type CUDA_POINTER_ATTRIBUTE_P2P_TOKENS struct {
	P2pToken     uint64  // 0
	VaSpaceToken uint32  // 8
	_            [4]byte // 12
}

// CUctxCigParam mirrors CUctxCigParam (struct CUctxCigParam_st).
type CUctxCigParam struct {
	SharedDataType CUcigDataType // 0
	_              [4]byte       // 4
	SharedData     uint64        // 8: void *
}

// CUctxCreateParams mirrors CUctxCreateParams (struct CUctxCreateParams_st) of
// cuCtxCreate_v4, which cuCtxCreate means in CUDA 13.0.
type CUctxCreateParams struct {
	ExecAffinityParams    uint64  // 0: CUexecAffinityParam *
	NumExecAffinityParams int32   // 8
	_                     [4]byte // 12
	CigParams             uint64  // 16: CUctxCigParam *
}

// StructLayout is the C layout of one mirrored structure.
type StructLayout struct {
	Name   string // the C typedef name
	Size   int
	Align  int
	Union  bool // a union: the Go mirror is an opaque byte array
	Fields []FieldLayout
}

// FieldLayout is the place of one C member; Path is the member designator offsetof takes
// ("allocFlags.usage" for a member of a nested struct).
type FieldLayout struct {
	Path   string
	Offset int
	Size   int
}

// Layouts returns the layout of every mirrored structure. The slice is the caller's.
func Layouts() []StructLayout {
	out := make([]StructLayout, len(layouts))
	for i, l := range layouts {
		l.Fields = append([]FieldLayout(nil), l.Fields...)
		out[i] = l
	}
	return out
}

var layouts = []StructLayout{
	{Name: "CUuuid", Size: SizeofCUuuid, Align: 1, Fields: []FieldLayout{{"bytes", 0, 16}}},
	{Name: "CUipcMemHandle", Size: SizeofCUipcMemHandle, Align: 1, Fields: []FieldLayout{{"reserved", 0, 64}}},
	{Name: "CUipcEventHandle", Size: SizeofCUipcEventHandle, Align: 1, Fields: []FieldLayout{{"reserved", 0, 64}}},
	{Name: "CUdevprop", Size: SizeofCUdevprop, Align: 4, Fields: []FieldLayout{
		{"maxThreadsPerBlock", 0, 4}, {"maxThreadsDim", 4, 12}, {"maxGridSize", 16, 12},
		{"sharedMemPerBlock", 28, 4}, {"totalConstantMemory", 32, 4}, {"SIMDWidth", 36, 4},
		{"memPitch", 40, 4}, {"regsPerBlock", 44, 4}, {"clockRate", 48, 4}, {"textureAlign", 52, 4},
	}},
	{Name: "CUDA_MEMCPY2D", Size: SizeofCUDA_MEMCPY2D, Align: 8, Fields: []FieldLayout{
		{"srcXInBytes", 0, 8}, {"srcY", 8, 8}, {"srcMemoryType", 16, 4}, {"srcHost", 24, 8},
		{"srcDevice", 32, 8}, {"srcArray", 40, 8}, {"srcPitch", 48, 8},
		{"dstXInBytes", 56, 8}, {"dstY", 64, 8}, {"dstMemoryType", 72, 4}, {"dstHost", 80, 8},
		{"dstDevice", 88, 8}, {"dstArray", 96, 8}, {"dstPitch", 104, 8},
		{"WidthInBytes", 112, 8}, {"Height", 120, 8},
	}},
	{Name: "CUDA_MEMCPY3D", Size: SizeofCUDA_MEMCPY3D, Align: 8, Fields: []FieldLayout{
		{"srcXInBytes", 0, 8}, {"srcY", 8, 8}, {"srcZ", 16, 8}, {"srcLOD", 24, 8},
		{"srcMemoryType", 32, 4}, {"srcHost", 40, 8}, {"srcDevice", 48, 8}, {"srcArray", 56, 8},
		{"reserved0", 64, 8}, {"srcPitch", 72, 8}, {"srcHeight", 80, 8},
		{"dstXInBytes", 88, 8}, {"dstY", 96, 8}, {"dstZ", 104, 8}, {"dstLOD", 112, 8},
		{"dstMemoryType", 120, 4}, {"dstHost", 128, 8}, {"dstDevice", 136, 8}, {"dstArray", 144, 8},
		{"reserved1", 152, 8}, {"dstPitch", 160, 8}, {"dstHeight", 168, 8},
		{"WidthInBytes", 176, 8}, {"Height", 184, 8}, {"Depth", 192, 8},
	}},
	{Name: "CUmemLocation", Size: SizeofCUmemLocation, Align: 4, Fields: []FieldLayout{
		{"type", 0, 4}, {"id", 4, 4},
	}},
	{Name: "CUmemAccessDesc", Size: SizeofCUmemAccessDesc, Align: 4, Fields: []FieldLayout{
		{"location", 0, 8}, {"location.type", 0, 4}, {"location.id", 4, 4}, {"flags", 8, 4},
	}},
	{Name: "CUmemAllocationProp", Size: SizeofCUmemAllocationProp, Align: 8, Fields: []FieldLayout{
		{"type", 0, 4}, {"requestedHandleTypes", 4, 4}, {"location", 8, 8}, {"location.type", 8, 4},
		{"location.id", 12, 4}, {"win32HandleMetaData", 16, 8}, {"allocFlags", 24, 8},
		{"allocFlags.compressionType", 24, 1}, {"allocFlags.gpuDirectRDMACapable", 25, 1},
		{"allocFlags.usage", 26, 2}, {"allocFlags.reserved", 28, 4},
	}},
	{Name: "CUmemPoolProps", Size: SizeofCUmemPoolProps, Align: 8, Fields: []FieldLayout{
		{"allocType", 0, 4}, {"handleTypes", 4, 4}, {"location", 8, 8}, {"location.type", 8, 4},
		{"location.id", 12, 4}, {"win32SecurityAttributes", 16, 8}, {"maxSize", 24, 8},
		{"usage", 32, 2}, {"reserved", 34, 54},
	}},
	{Name: "CUaccessPolicyWindow", Size: SizeofCUaccessPolicyWindow, Align: 8, Fields: []FieldLayout{
		{"base_ptr", 0, 8}, {"num_bytes", 8, 8}, {"hitRatio", 16, 4}, {"hitProp", 20, 4}, {"missProp", 24, 4},
	}},
	{Name: "CUlaunchAttributeValue", Size: SizeofCUlaunchAttributeValue, Align: 8, Union: true, Fields: []FieldLayout{
		{"pad", 0, 64},
		{"accessPolicyWindow", 0, 32}, {"accessPolicyWindow.hitRatio", 16, 4},
		{"cooperative", 0, 4}, {"syncPolicy", 0, 4},
		{"clusterDim", 0, 12}, {"clusterDim.x", 0, 4}, {"clusterDim.y", 4, 4}, {"clusterDim.z", 8, 4},
		{"clusterSchedulingPolicyPreference", 0, 4}, {"programmaticStreamSerializationAllowed", 0, 4},
		{"programmaticEvent", 0, 16}, {"programmaticEvent.event", 0, 8},
		{"programmaticEvent.flags", 8, 4}, {"programmaticEvent.triggerAtBlockStart", 12, 4},
		{"launchCompletionEvent", 0, 16}, {"launchCompletionEvent.event", 0, 8}, {"launchCompletionEvent.flags", 8, 4},
		{"priority", 0, 4},
		{"memSyncDomainMap", 0, 2}, {"memSyncDomainMap.default_", 0, 1}, {"memSyncDomainMap.remote", 1, 1},
		{"memSyncDomain", 0, 4},
		{"preferredClusterDim", 0, 12}, {"preferredClusterDim.z", 8, 4},
		{"deviceUpdatableKernelNode", 0, 16}, {"deviceUpdatableKernelNode.deviceUpdatable", 0, 4},
		{"deviceUpdatableKernelNode.devNode", 8, 8},
		{"sharedMemCarveout", 0, 4}, {"nvlinkUtilCentricScheduling", 0, 4},
	}},
	{Name: "CUlaunchAttribute", Size: SizeofCUlaunchAttribute, Align: 8, Fields: []FieldLayout{
		{"id", 0, 4}, {"pad", 4, 4}, {"value", 8, 64},
	}},
	{Name: "CUlaunchConfig", Size: SizeofCUlaunchConfig, Align: 8, Fields: []FieldLayout{
		{"gridDimX", 0, 4}, {"gridDimY", 4, 4}, {"gridDimZ", 8, 4},
		{"blockDimX", 12, 4}, {"blockDimY", 16, 4}, {"blockDimZ", 20, 4},
		{"sharedMemBytes", 24, 4}, {"hStream", 32, 8}, {"attrs", 40, 8}, {"numAttrs", 48, 4},
	}},
	{Name: "CUDA_POINTER_ATTRIBUTE_P2P_TOKENS", Size: SizeofCUDA_POINTER_ATTRIBUTE_P2P_TOKENS, Align: 8, Fields: []FieldLayout{
		{"p2pToken", 0, 8}, {"vaSpaceToken", 8, 4},
	}},
	{Name: "CUctxCigParam", Size: SizeofCUctxCigParam, Align: 8, Fields: []FieldLayout{
		{"sharedDataType", 0, 4}, {"sharedData", 8, 8},
	}},
	{Name: "CUctxCreateParams", Size: SizeofCUctxCreateParams, Align: 8, Fields: []FieldLayout{
		{"execAffinityParams", 0, 8}, {"numExecAffinityParams", 8, 4}, {"cigParams", 16, 8},
	}},
}
