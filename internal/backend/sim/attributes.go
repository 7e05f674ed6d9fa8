package sim

import (
	"crypto/sha256"
	"fmt"

	"github.com/gpuos/gpuos/internal/backend"
)

// deviceInfo describes device ordinal of a backend with options o: an H100
// SXM5 (sm_90) with o's memory, SM count and name.
func deviceInfo(o Options, ordinal int) backend.DeviceInfo {
	sum := sha256.Sum256(fmt.Appendf(nil, "gpuos sim device %d", ordinal))
	var uuid [16]byte
	copy(uuid[:], sum[:])
	uuid[6] = uuid[6]&0x0f | 0x40 // a version-4-shaped UUID, stable per ordinal
	uuid[8] = uuid[8]&0x3f | 0x80
	return backend.DeviceInfo{
		Ordinal:      ordinal,
		Name:         o.Name,
		UUID:         uuid,
		PCIBusID:     fmt.Sprintf("0000:%02x:00.0", pciBus(ordinal)),
		TotalMemory:  o.Memory,
		ComputeMajor: 9,
		ComputeMinor: 0,
		SMCount:      o.SMs,
		Attributes:   attributes(o, ordinal),
	}
}

// pciBus is a plausible bus number per ordinal.
func pciBus(ordinal int) int { return (0x19 + 0x10*ordinal) & 0xff }

// attributes returns every CUdevice_attribute of an H100 SXM5 80GB (driver
// 580, CUDA 13) with the sim's own memory, SM count and clock, indexed by
// attribute number.
func attributes(o Options, ordinal int) []int32 {
	clockKHz := int32(o.Cost.ClockMHz * 1000)
	a := make([]int32, attrMax)
	set := func(attr int, v int32) { a[attr] = v }

	set(attrMaxThreadsPerBlock, maxThreadsPerBlock)
	set(attrMaxBlockDimX, maxBlockDimXY)
	set(attrMaxBlockDimY, maxBlockDimXY)
	set(attrMaxBlockDimZ, maxBlockDimZ)
	set(attrMaxGridDimX, maxGridDimX)
	set(attrMaxGridDimY, maxGridDimYZ)
	set(attrMaxGridDimZ, maxGridDimYZ)
	set(attrMaxSharedMemoryPerBlock, sharedPerBlock)
	set(attrTotalConstantMemory, constantMemoryBytes)
	set(attrWarpSize, 32)
	set(attrMaxPitch, 1<<31-1)
	set(attrMaxRegistersPerBlock, registersPerBlockMax)
	set(attrClockRate, clockKHz)
	set(attrTextureAlignment, 512)
	set(attrGPUOverlap, 1)
	set(attrMultiprocessorCount, int32(o.SMs))
	set(attrKernelExecTimeout, 0)
	set(attrIntegrated, 0)
	set(attrCanMapHostMemory, 1)
	set(attrComputeMode, 0) // default
	set(attrMaxTexture1DWidth, 131072)
	set(attrMaxTexture2DWidth, 131072)
	set(attrMaxTexture2DHeight, 65536)
	set(attrMaxTexture3DWidth, 16384)
	set(attrMaxTexture3DHeight, 16384)
	set(attrMaxTexture3DDepth, 16384)
	set(attrMaxTexture2DLayeredWidth, 32768)
	set(attrMaxTexture2DLayeredHeight, 32768)
	set(attrMaxTexture2DLayeredLayers, 2048)
	set(attrSurfaceAlignment, 512)
	set(attrConcurrentKernels, 1)
	set(attrECCEnabled, 1)
	set(attrPCIBusID, int32(pciBus(ordinal)))
	set(attrPCIDeviceID, 0)
	set(attrTCCDriver, 0)
	set(attrMemoryClockRate, 2619000) // kHz, HBM3
	set(attrGlobalMemoryBusWidth, 5120)
	set(attrL2CacheSize, 50<<20)
	set(attrMaxThreadsPerMultiprocessor, 2048)
	set(attrAsyncEngineCount, 2) // the sim's two copy engines
	set(attrUnifiedAddressing, 1)
	set(attrMaxTexture1DLayeredWidth, 32768)
	set(attrMaxTexture1DLayeredLayers, 2048)
	set(attrCanTex2DGather, 1)
	set(attrMaxTexture2DGatherWidth, 32768)
	set(attrMaxTexture2DGatherHeight, 32768)
	set(attrMaxTexture3DWidthAlternate, 8192)
	set(attrMaxTexture3DHeightAlternate, 8192)
	set(attrMaxTexture3DDepthAlternate, 32768)
	set(attrPCIDomainID, 0)
	set(attrTexturePitchAlignment, 32)
	set(attrMaxTextureCubemapWidth, 32768)
	set(attrMaxTextureCubemapLayeredWidth, 32768)
	set(attrMaxTextureCubemapLayeredLayers, 2046)
	set(attrMaxSurface1DWidth, 32768)
	set(attrMaxSurface2DWidth, 131072)
	set(attrMaxSurface2DHeight, 65536)
	set(attrMaxSurface3DWidth, 16384)
	set(attrMaxSurface3DHeight, 16384)
	set(attrMaxSurface3DDepth, 16384)
	set(attrMaxSurface1DLayeredWidth, 32768)
	set(attrMaxSurface1DLayeredLayers, 2048)
	set(attrMaxSurface2DLayeredWidth, 32768)
	set(attrMaxSurface2DLayeredHeight, 32768)
	set(attrMaxSurface2DLayeredLayers, 2048)
	set(attrMaxSurfaceCubemapWidth, 32768)
	set(attrMaxSurfaceCubemapLayeredWidth, 32768)
	set(attrMaxSurfaceCubemapLayeredLayers, 2046)
	set(attrMaxTexture1DLinearWidth, 268435456)
	set(attrMaxTexture2DLinearWidth, 131072)
	set(attrMaxTexture2DLinearHeight, 65000)
	set(attrMaxTexture2DLinearPitch, 2097120)
	set(attrMaxTexture2DMipmappedWidth, 32768)
	set(attrMaxTexture2DMipmappedHeight, 32768)
	set(attrComputeCapabilityMajor, 9)
	set(attrComputeCapabilityMinor, 0)
	set(attrMaxTexture1DMipmappedWidth, 32768)
	set(attrStreamPrioritiesSupported, 1)
	set(attrGlobalL1CacheSupported, 1)
	set(attrLocalL1CacheSupported, 1)
	set(attrMaxSharedMemoryPerMultiprocessor, sharedPerSM)
	set(attrMaxRegistersPerMultiprocessor, 65536)
	set(attrManagedMemory, 1)
	set(attrMultiGPUBoard, 0)
	set(attrMultiGPUBoardGroupID, int32(ordinal))
	set(attrHostNativeAtomicSupported, 0)
	set(attrSingleToDoublePrecisionPerfRatio, 2)
	set(attrPageableMemoryAccess, 0)
	set(attrConcurrentManagedAccess, 1)
	set(attrComputePreemptionSupported, 1)
	set(attrCanUseHostPointerForRegisteredMem, 1)
	set(attrCanUseStreamMemOpsV1, 1)
	set(attrCanUse64BitStreamMemOpsV1, 1)
	set(attrCanUseStreamWaitValueNorV1, 1)
	set(attrCooperativeLaunch, 1)
	set(attrCooperativeMultiDeviceLaunch, 0)
	set(attrMaxSharedMemoryPerBlockOptin, sharedPerBlockOptin)
	set(attrCanFlushRemoteWrites, 0)
	set(attrHostRegisterSupported, 1)
	set(attrPageableMemoryAccessUsesHostPageTables, 0)
	set(attrDirectManagedMemAccessFromHost, 0)
	set(attrVirtualMemoryManagementSupported, 1)
	set(attrHandleTypePosixFileDescriptorSupported, 1)
	set(attrHandleTypeWin32HandleSupported, 0)
	set(attrHandleTypeWin32KMTHandleSupported, 0)
	set(attrMaxBlocksPerMultiprocessor, 32)
	set(attrGenericCompressionSupported, 1)
	set(attrMaxPersistingL2CacheSize, 32505856)
	set(attrMaxAccessPolicyWindowSize, 134213632)
	set(attrGPUDirectRDMAWithCUDAVMMSupported, 1)
	set(attrReservedSharedMemoryPerBlock, 1024)
	set(attrSparseCUDAArraySupported, 1)
	set(attrReadOnlyHostRegisterSupported, 1)
	set(attrTimelineSemaphoreInteropSupported, 1)
	set(attrMemoryPoolsSupported, 1)
	set(attrGPUDirectRDMASupported, 1)
	set(attrGPUDirectRDMAFlushWritesOptions, 1)
	set(attrGPUDirectRDMAWritesOrdering, 100) // CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER
	set(attrMempoolSupportedHandleTypes, 1)   // POSIX file descriptor
	set(attrClusterLaunch, 1)
	set(attrDeferredMappingCUDAArraySupported, 1)
	set(attrCanUse64BitStreamMemOps, 1)
	set(attrCanUseStreamWaitValueNor, 1)
	set(attrDMABufSupported, 1)
	set(attrIPCEventSupported, 1)
	set(attrMemSyncDomainCount, 4)
	set(attrTensorMapAccessSupported, 1)
	set(attrHandleTypeFabricSupported, 0)
	set(attrUnifiedFunctionPointers, 1)
	set(attrNUMAConfig, 0) // none
	set(attrNUMAID, -1)
	set(attrMulticastSupported, 0)
	set(attrMPSEnabled, 0)
	set(attrHostNUMAID, 0)
	set(attrD3D12CIGSupported, 0)
	set(attrMemDecompressAlgorithmMask, 0)
	set(attrMemDecompressMaximumLength, 0)
	set(attrVulkanCIGSupported, 0)
	set(attrGPUPCIDeviceID, 0x233010DE)    // device 0x2330 (H100 SXM5 80GB), vendor NVIDIA
	set(attrGPUPCISubsystemID, 0x16C110DE) // subsystem 0x16C1, NVIDIA
	set(attrHostNUMAVirtualMemoryManagementSupported, 0)
	set(attrHostNUMAMemoryPoolsSupported, 0)
	set(attrHostNUMAMultinodeIPCSupported, 0)
	set(attrHostMemoryPoolsSupported, 0)
	set(attrHostVirtualMemoryManagementSupported, 0)
	set(attrHostAllocDMABufSupported, 0)
	set(attrOnlyPartialHostNativeAtomicSupported, 0)
	return a
}
