/*
 * cuda.h - gpuos's own declarations of the CUDA driver API.
 *
 * The part of the CUDA 13.0 driver API that gpuos's libcuda.so.1 implements, with the
 * standard names, types, values and structure layouts, so that C and C++ programs build
 * with `gcc -Iinclude ... -lcuda` and no NVIDIA toolkit. Written for gpuos from the public
 * API documentation; internal/abi/cuda mirrors the same values in Go, and its tests check
 * the two against each other (and, on a machine with the toolkit, against NVIDIA's header).
 *
 * As in the toolkit's header, an API name that has versioned symbols is a macro for the
 * symbol the CUDA 13.0 ABI uses (cuMemAlloc is cuMemAlloc_v2, cuCtxCreate is
 * cuCtxCreate_v4), and defining CUDA_API_PER_THREAD_DEFAULT_STREAM before including this
 * header selects the per-thread default stream variants (_ptds, _ptsz).
 *
 * Only 64-bit targets are supported.
 */
#ifndef GPUOS_INCLUDE_CUDA_H
#define GPUOS_INCLUDE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#define CUDA_VERSION 13000

#if defined(_WIN32)
#define CUDAAPI __stdcall
#define CUDA_CB __stdcall
#else
#define CUDAAPI
#define CUDA_CB
#endif

/* API names to the symbols of the CUDA 13.0 ABI. */
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#define CU_API_PTDS_(api) api##_ptds
#define CU_API_PTSZ_(api) api##_ptsz
#else
#define CU_API_PTDS_(api) api
#define CU_API_PTSZ_(api) api
#endif

#define cuDeviceGetUuid                      cuDeviceGetUuid_v2
#define cuDeviceTotalMem                     cuDeviceTotalMem_v2
#define cuDevicePrimaryCtxRelease            cuDevicePrimaryCtxRelease_v2
#define cuDevicePrimaryCtxSetFlags           cuDevicePrimaryCtxSetFlags_v2
#define cuDevicePrimaryCtxReset              cuDevicePrimaryCtxReset_v2
#define cuCtxCreate                          cuCtxCreate_v4
#define cuCtxDestroy                         cuCtxDestroy_v2
#define cuCtxPushCurrent                     cuCtxPushCurrent_v2
#define cuCtxPopCurrent                      cuCtxPopCurrent_v2
#define cuMemGetInfo                         cuMemGetInfo_v2
#define cuMemAlloc                           cuMemAlloc_v2
#define cuMemAllocPitch                      cuMemAllocPitch_v2
#define cuMemFree                            cuMemFree_v2
#define cuMemGetAddressRange                 cuMemGetAddressRange_v2
#define cuMemAllocHost                       cuMemAllocHost_v2
#define cuMemHostGetDevicePointer            cuMemHostGetDevicePointer_v2
#define cuMemHostRegister                    cuMemHostRegister_v2
#define cuMemsetD8                           CU_API_PTDS_(cuMemsetD8_v2)
#define cuMemsetD16                          CU_API_PTDS_(cuMemsetD16_v2)
#define cuMemsetD32                          CU_API_PTDS_(cuMemsetD32_v2)
#define cuMemsetD2D8                         CU_API_PTDS_(cuMemsetD2D8_v2)
#define cuMemsetD2D16                        CU_API_PTDS_(cuMemsetD2D16_v2)
#define cuMemsetD2D32                        CU_API_PTDS_(cuMemsetD2D32_v2)
#define cuMemsetD8Async                      CU_API_PTSZ_(cuMemsetD8Async)
#define cuMemsetD16Async                     CU_API_PTSZ_(cuMemsetD16Async)
#define cuMemsetD32Async                     CU_API_PTSZ_(cuMemsetD32Async)
#define cuMemsetD2D8Async                    CU_API_PTSZ_(cuMemsetD2D8Async)
#define cuMemsetD2D16Async                   CU_API_PTSZ_(cuMemsetD2D16Async)
#define cuMemsetD2D32Async                   CU_API_PTSZ_(cuMemsetD2D32Async)
#define cuMemcpy                             CU_API_PTDS_(cuMemcpy)
#define cuMemcpyPeer                         CU_API_PTDS_(cuMemcpyPeer)
#define cuMemcpyHtoD                         CU_API_PTDS_(cuMemcpyHtoD_v2)
#define cuMemcpyDtoH                         CU_API_PTDS_(cuMemcpyDtoH_v2)
#define cuMemcpyDtoD                         CU_API_PTDS_(cuMemcpyDtoD_v2)
#define cuMemcpy2D                           CU_API_PTDS_(cuMemcpy2D_v2)
#define cuMemcpy2DUnaligned                  CU_API_PTDS_(cuMemcpy2DUnaligned_v2)
#define cuMemcpy3D                           CU_API_PTDS_(cuMemcpy3D_v2)
#define cuMemcpyAsync                        CU_API_PTSZ_(cuMemcpyAsync)
#define cuMemcpyPeerAsync                    CU_API_PTSZ_(cuMemcpyPeerAsync)
#define cuMemcpyHtoDAsync                    CU_API_PTSZ_(cuMemcpyHtoDAsync_v2)
#define cuMemcpyDtoHAsync                    CU_API_PTSZ_(cuMemcpyDtoHAsync_v2)
#define cuMemcpyDtoDAsync                    CU_API_PTSZ_(cuMemcpyDtoDAsync_v2)
#define cuMemcpy2DAsync                      CU_API_PTSZ_(cuMemcpy2DAsync_v2)
#define cuMemcpy3DAsync                      CU_API_PTSZ_(cuMemcpy3DAsync_v2)
#define cuModuleGetGlobal                    cuModuleGetGlobal_v2
#define cuLaunchKernel                       CU_API_PTSZ_(cuLaunchKernel)
#define cuLaunchKernelEx                     CU_API_PTSZ_(cuLaunchKernelEx)
#define cuLaunchCooperativeKernel            CU_API_PTSZ_(cuLaunchCooperativeKernel)
#define cuLaunchHostFunc                     CU_API_PTSZ_(cuLaunchHostFunc)
#define cuStreamGetPriority                  CU_API_PTSZ_(cuStreamGetPriority)
#define cuStreamGetFlags                     CU_API_PTSZ_(cuStreamGetFlags)
#define cuStreamGetId                        CU_API_PTSZ_(cuStreamGetId)
#define cuStreamGetCtx                       CU_API_PTSZ_(cuStreamGetCtx)
#define cuStreamGetDevice                    CU_API_PTSZ_(cuStreamGetDevice)
#define cuStreamWaitEvent                    CU_API_PTSZ_(cuStreamWaitEvent)
#define cuStreamAddCallback                  CU_API_PTSZ_(cuStreamAddCallback)
#define cuStreamQuery                        CU_API_PTSZ_(cuStreamQuery)
#define cuStreamSynchronize                  CU_API_PTSZ_(cuStreamSynchronize)
#define cuStreamDestroy                      cuStreamDestroy_v2
#define cuStreamBeginCapture                 CU_API_PTSZ_(cuStreamBeginCapture_v2)
#define cuStreamEndCapture                   CU_API_PTSZ_(cuStreamEndCapture)
#define cuStreamIsCapturing                  CU_API_PTSZ_(cuStreamIsCapturing)
#define cuGraphInstantiate                   cuGraphInstantiateWithFlags
#define cuGraphLaunch                        CU_API_PTSZ_(cuGraphLaunch)
#define cuEventRecord                        CU_API_PTSZ_(cuEventRecord)
#define cuEventRecordWithFlags               CU_API_PTSZ_(cuEventRecordWithFlags)
#define cuEventElapsedTime                   cuEventElapsedTime_v2
#define cuEventDestroy                       cuEventDestroy_v2
#define cuIpcOpenMemHandle                   cuIpcOpenMemHandle_v2
#define cuMemAllocAsync                      CU_API_PTSZ_(cuMemAllocAsync)
#define cuMemAllocFromPoolAsync              CU_API_PTSZ_(cuMemAllocFromPoolAsync)
#define cuMemFreeAsync                       CU_API_PTSZ_(cuMemFreeAsync)
#define cuGetProcAddress                     cuGetProcAddress_v2

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Scalar types and handles ------------------------------------------------------------ */

typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;

typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef unsigned long long CUmemGenericAllocationHandle_v1;
typedef CUmemGenericAllocationHandle_v1 CUmemGenericAllocationHandle;

typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUarray_st *CUarray;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUgraphDeviceUpdatableNode_st *CUgraphDeviceNode;

/* ---- Enumerations ------------------------------------------------------------------------ */

typedef enum cudaError_enum {
    CUDA_SUCCESS                              = 0,    /* no error */
    CUDA_ERROR_INVALID_VALUE                  = 1,    /* invalid argument */
    CUDA_ERROR_OUT_OF_MEMORY                  = 2,    /* out of memory */
    CUDA_ERROR_NOT_INITIALIZED                = 3,    /* initialization error */
    CUDA_ERROR_DEINITIALIZED                  = 4,    /* driver shutting down */
    CUDA_ERROR_PROFILER_DISABLED              = 5,    /* profiler disabled while using external profiling tool */
    CUDA_ERROR_PROFILER_NOT_INITIALIZED       = 6,    /* profiler not initialized: call cudaProfilerInitialize() */
    CUDA_ERROR_PROFILER_ALREADY_STARTED       = 7,    /* profiler already started */
    CUDA_ERROR_PROFILER_ALREADY_STOPPED       = 8,    /* profiler already stopped */
    CUDA_ERROR_STUB_LIBRARY                   = 34,   /* CUDA driver is a stub library */
    CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER     = 36,   /* this call requires a newer CUDA driver */
    CUDA_ERROR_DEVICE_UNAVAILABLE             = 46,   /* CUDA-capable device(s) is/are busy or unavailable */
    CUDA_ERROR_NO_DEVICE                      = 100,  /* no CUDA-capable device is detected */
    CUDA_ERROR_INVALID_DEVICE                 = 101,  /* invalid device ordinal */
    CUDA_ERROR_DEVICE_NOT_LICENSED            = 102,  /* device doesn't have valid Grid license */
    CUDA_ERROR_INVALID_IMAGE                  = 200,  /* device kernel image is invalid */
    CUDA_ERROR_INVALID_CONTEXT                = 201,  /* invalid device context */
    CUDA_ERROR_CONTEXT_ALREADY_CURRENT        = 202,  /* context already current */
    CUDA_ERROR_MAP_FAILED                     = 205,  /* mapping of buffer object failed */
    CUDA_ERROR_UNMAP_FAILED                   = 206,  /* unmapping of buffer object failed */
    CUDA_ERROR_ARRAY_IS_MAPPED                = 207,  /* array is mapped */
    CUDA_ERROR_ALREADY_MAPPED                 = 208,  /* resource already mapped */
    CUDA_ERROR_NO_BINARY_FOR_GPU              = 209,  /* no kernel image is available for execution on the device */
    CUDA_ERROR_ALREADY_ACQUIRED               = 210,  /* resource already acquired */
    CUDA_ERROR_NOT_MAPPED                     = 211,  /* resource not mapped */
    CUDA_ERROR_NOT_MAPPED_AS_ARRAY            = 212,  /* resource not mapped as array */
    CUDA_ERROR_NOT_MAPPED_AS_POINTER          = 213,  /* resource not mapped as pointer */
    CUDA_ERROR_ECC_UNCORRECTABLE              = 214,  /* uncorrectable ECC error encountered */
    CUDA_ERROR_UNSUPPORTED_LIMIT              = 215,  /* limit is not supported on this architecture */
    CUDA_ERROR_CONTEXT_ALREADY_IN_USE         = 216,  /* exclusive-thread device already in use by a different thread */
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED        = 217,  /* peer access is not supported between these two devices */
    CUDA_ERROR_INVALID_PTX                    = 218,  /* a PTX JIT compilation failed */
    CUDA_ERROR_INVALID_GRAPHICS_CONTEXT       = 219,  /* invalid OpenGL or DirectX context */
    CUDA_ERROR_NVLINK_UNCORRECTABLE           = 220,  /* uncorrectable NVLink error detected during the execution */
    CUDA_ERROR_JIT_COMPILER_NOT_FOUND         = 221,  /* PTX JIT compiler library not found */
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION        = 222,  /* the provided PTX was compiled with an unsupported toolchain */
    CUDA_ERROR_JIT_COMPILATION_DISABLED       = 223,  /* PTX JIT compilation was disabled */
    CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY      = 224,  /* the provided execution affinity is not supported */
    CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC       = 225,  /* the provided PTX contains unsupported call to cudaDeviceSynchronize */
    CUDA_ERROR_CONTAINED                      = 226,  /* an exception occurred on the device and was contained */
    CUDA_ERROR_INVALID_SOURCE                 = 300,  /* device kernel image is invalid */
    CUDA_ERROR_FILE_NOT_FOUND                 = 301,  /* file not found */
    CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND = 302,  /* shared object symbol not found */
    CUDA_ERROR_SHARED_OBJECT_INIT_FAILED      = 303,  /* shared object initialization failed */
    CUDA_ERROR_OPERATING_SYSTEM               = 304,  /* OS call failed or operation not supported on this OS */
    CUDA_ERROR_INVALID_HANDLE                 = 400,  /* invalid resource handle */
    CUDA_ERROR_ILLEGAL_STATE                  = 401,  /* the operation cannot be performed in the present state */
    CUDA_ERROR_LOSSY_QUERY                    = 402,  /* attempted introspection would be semantically lossy */
    CUDA_ERROR_NOT_FOUND                      = 500,  /* named symbol not found */
    CUDA_ERROR_NOT_READY                      = 600,  /* device not ready */
    CUDA_ERROR_ILLEGAL_ADDRESS                = 700,  /* an illegal memory access was encountered */
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES        = 701,  /* too many resources requested for launch */
    CUDA_ERROR_LAUNCH_TIMEOUT                 = 702,  /* the launch timed out and was terminated */
    CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING  = 703,  /* launch uses incompatible texturing mode */
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED    = 704,  /* peer access is already enabled */
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED        = 705,  /* peer access has not been enabled */
    CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE         = 708,  /* cannot set while device is active in this process */
    CUDA_ERROR_CONTEXT_IS_DESTROYED           = 709,  /* context is destroyed */
    CUDA_ERROR_ASSERT                         = 710,  /* device-side assert triggered */
    CUDA_ERROR_TOO_MANY_PEERS                 = 711,  /* peer mapping resources exhausted */
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,  /* part or all of the requested memory range is already mapped */
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED     = 713,  /* pointer does not correspond to a registered memory region */
    CUDA_ERROR_HARDWARE_STACK_ERROR           = 714,  /* hardware stack error */
    CUDA_ERROR_ILLEGAL_INSTRUCTION            = 715,  /* an illegal instruction was encountered */
    CUDA_ERROR_MISALIGNED_ADDRESS             = 716,  /* misaligned address */
    CUDA_ERROR_INVALID_ADDRESS_SPACE          = 717,  /* operation not supported on global/shared address space */
    CUDA_ERROR_INVALID_PC                     = 718,  /* invalid program counter */
    CUDA_ERROR_LAUNCH_FAILED                  = 719,  /* unspecified launch failure */
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE   = 720,  /* too many blocks in cooperative launch */
    CUDA_ERROR_TENSOR_MEMORY_LEAK             = 721,  /* tensor memory not completely freed */
    CUDA_ERROR_NOT_PERMITTED                  = 800,  /* operation not permitted */
    CUDA_ERROR_NOT_SUPPORTED                  = 801,  /* operation not supported */
    CUDA_ERROR_SYSTEM_NOT_READY               = 802,  /* system not yet initialized */
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH         = 803,  /* system has unsupported display driver / cuda driver combination */
    CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,  /* forward compatibility was attempted on non supported HW */
    CUDA_ERROR_MPS_CONNECTION_FAILED          = 805,  /* MPS client failed to connect to the MPS control daemon or the MPS server */
    CUDA_ERROR_MPS_RPC_FAILURE                = 806,  /* the remote procedural call between the MPS server and the MPS client failed */
    CUDA_ERROR_MPS_SERVER_NOT_READY           = 807,  /* MPS server is not ready to accept new MPS client requests */
    CUDA_ERROR_MPS_MAX_CLIENTS_REACHED        = 808,  /* the hardware resources required to create MPS client have been exhausted */
    CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED    = 809,  /* the hardware resources required to support device connections have been exhausted */
    CUDA_ERROR_MPS_CLIENT_TERMINATED          = 810,  /* the MPS client has been terminated by the server */
    CUDA_ERROR_CDP_NOT_SUPPORTED              = 811,  /* the module is using CUDA Dynamic Parallelism, but the current configuration does not support it */
    CUDA_ERROR_CDP_VERSION_MISMATCH           = 812,  /* the module uses CUDA Dynamic Parallelism that does not match the driver's version */
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED     = 900,  /* operation not permitted when stream is capturing */
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED     = 901,  /* operation failed due to a previous error during capture */
    CUDA_ERROR_STREAM_CAPTURE_MERGE           = 902,  /* operation would result in a merge of separate capture sequences */
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED       = 903,  /* capture was not ended in the same stream as it began */
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED        = 904,  /* capturing stream has unjoined work */
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION       = 905,  /* dependency created on uncaptured work in another stream */
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT        = 906,  /* operation would make the legacy stream depend on a capturing blocking stream */
    CUDA_ERROR_CAPTURED_EVENT                 = 907,  /* operation not permitted on an event last recorded in a capturing stream */
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD    = 908,  /* attempt to terminate a thread-local capture sequence from another thread */
    CUDA_ERROR_TIMEOUT                        = 909,  /* wait operation timed out */
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE      = 910,  /* the graph update was not performed because it included changes which violated constraints specific to instantiated graph update */
    CUDA_ERROR_EXTERNAL_DEVICE                = 911,  /* an async error has occurred in an external entity outside of CUDA */
    CUDA_ERROR_INVALID_CLUSTER_SIZE           = 912,  /* a kernel launch error has occurred due to cluster misconfiguration */
    CUDA_ERROR_FUNCTION_NOT_LOADED            = 913,  /* the function handle is not loaded when calling an API that requires a loaded function */
    CUDA_ERROR_INVALID_RESOURCE_TYPE          = 914,  /* one or more resources passed in are not valid resource types for the operation */
    CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION = 915,  /* one or more resources are insufficient or non-applicable for the operation */
    CUDA_ERROR_KEY_ROTATION                   = 916,  /* an error happened during the key rotation sequence */
    CUDA_ERROR_UNKNOWN                        = 999   /* unknown error */
} CUresult;

typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK                         = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X                               = 2,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y                               = 3,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z                               = 4,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X                                = 5,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y                                = 6,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z                                = 7,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK                   = 8,
    CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY                         = 9,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE                                     = 10,
    CU_DEVICE_ATTRIBUTE_MAX_PITCH                                     = 11,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK                       = 12,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE                                    = 13,
    CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT                             = 14,
    CU_DEVICE_ATTRIBUTE_GPU_OVERLAP                                   = 15,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT                          = 16,
    CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT                           = 17,
    CU_DEVICE_ATTRIBUTE_INTEGRATED                                    = 18,
    CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY                           = 19,
    CU_DEVICE_ATTRIBUTE_COMPUTE_MODE                                  = 20,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH                       = 21,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH                       = 22,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT                      = 23,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH                       = 24,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT                      = 25,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH                       = 26,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH               = 27,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT              = 28,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS              = 29,
    CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT                             = 30,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS                            = 31,
    CU_DEVICE_ATTRIBUTE_ECC_ENABLED                                   = 32,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID                                    = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID                                 = 34,
    CU_DEVICE_ATTRIBUTE_TCC_DRIVER                                    = 35,
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE                             = 36,
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH                       = 37,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE                                 = 38,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR                = 39,
    CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT                            = 40,
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING                            = 41,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH               = 42,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS              = 43,
    CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER                              = 44,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH                = 45,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT               = 46,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE             = 47,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE            = 48,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE             = 49,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID                                 = 50,
    CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT                       = 51,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH                  = 52,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH          = 53,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS         = 54,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH                       = 55,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH                       = 56,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT                      = 57,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH                       = 58,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT                      = 59,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH                       = 60,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH               = 61,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS              = 62,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH               = 63,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT              = 64,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS              = 65,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH                  = 66,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH          = 67,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS         = 68,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH                = 69,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH                = 70,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT               = 71,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH                = 72,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH             = 73,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT            = 74,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR                      = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR                      = 76,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH             = 77,
    CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED                   = 78,
    CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED                     = 79,
    CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED                      = 80,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR          = 81,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR              = 82,
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY                                = 83,
    CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD                               = 84,
    CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID                      = 85,
    CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED                  = 86,
    CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO         = 87,
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS                        = 88,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS                     = 89,
    CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED                  = 90,
    CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM       = 91,
    CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1                     = 92,
    CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1              = 93,
    CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1              = 94,
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH                            = 95,
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH               = 96,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN             = 97,
    CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES                       = 98,
    CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED                       = 99,
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES  = 100,
    CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST           = 101,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED          = 102,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED   = 103,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED            = 104,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED        = 105,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR                 = 106,
    CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED                 = 107,
    CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE                  = 108,
    CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE                 = 109,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED       = 110,
    CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK              = 111,
    CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED                   = 112,
    CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED             = 113,
    CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED          = 114,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED                        = 115,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED                     = 116,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS          = 117,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING               = 118,
    CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES                = 119,
    CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH                                = 120,
    CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED         = 121,
    CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS                 = 122,
    CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR                 = 123,
    CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED                             = 124,
    CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED                           = 125,
    CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT                         = 126,
    CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED                   = 127,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED                  = 128,
    CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS                     = 129,
    CU_DEVICE_ATTRIBUTE_NUMA_CONFIG                                   = 130,
    CU_DEVICE_ATTRIBUTE_NUMA_ID                                       = 131,
    CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED                           = 132,
    CU_DEVICE_ATTRIBUTE_MPS_ENABLED                                   = 133,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID                                  = 134,
    CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED                           = 135,
    CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK                 = 136,
    CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH                 = 137,
    CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED                          = 138,
    CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID                             = 139,
    CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID                          = 140,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 141,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED              = 142,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED             = 143,
    CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED                   = 144,
    CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED      = 145,
    CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED                  = 146,
    CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED     = 147,
    CU_DEVICE_ATTRIBUTE_MAX                                           = 148,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_HEIGHT                = 28,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_NUMSLICES             = 29,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_WIDTH                 = 27,
    CU_DEVICE_ATTRIBUTE_REGISTERS_PER_BLOCK                           = 12,
    CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK                       = 8,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED           = 102
} CUdevice_attribute;

typedef enum CUfunction_attribute_enum {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK                = 0,
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES                    = 1,
    CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES                     = 2,
    CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES                     = 3,
    CU_FUNC_ATTRIBUTE_NUM_REGS                             = 4,
    CU_FUNC_ATTRIBUTE_PTX_VERSION                          = 5,
    CU_FUNC_ATTRIBUTE_BINARY_VERSION                       = 6,
    CU_FUNC_ATTRIBUTE_CACHE_MODE_CA                        = 7,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES        = 8,
    CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT     = 9,
    CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET             = 10,
    CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH               = 11,
    CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT              = 12,
    CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH               = 13,
    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED    = 14,
    CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 15,
    CU_FUNC_ATTRIBUTE_MAX                                  = 16
} CUfunction_attribute;

typedef enum CUpointer_attribute_enum {
    CU_POINTER_ATTRIBUTE_CONTEXT                    = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE                = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER             = 3,
    CU_POINTER_ATTRIBUTE_HOST_POINTER               = 4,
    CU_POINTER_ATTRIBUTE_P2P_TOKENS                 = 5,
    CU_POINTER_ATTRIBUTE_SYNC_MEMOPS                = 6,
    CU_POINTER_ATTRIBUTE_BUFFER_ID                  = 7,
    CU_POINTER_ATTRIBUTE_IS_MANAGED                 = 8,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL             = 9,
    CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = 10,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR           = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE                 = 12,
    CU_POINTER_ATTRIBUTE_MAPPED                     = 13,
    CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES       = 14,
    CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE = 15,
    CU_POINTER_ATTRIBUTE_ACCESS_FLAGS               = 16,
    CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE             = 17,
    CU_POINTER_ATTRIBUTE_MAPPING_SIZE               = 18,
    CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR          = 19,
    CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID            = 20,
    CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE   = 21
} CUpointer_attribute;

typedef enum CUmemorytype_enum {
    CU_MEMORYTYPE_HOST    = 1,
    CU_MEMORYTYPE_DEVICE  = 2,
    CU_MEMORYTYPE_ARRAY   = 3,
    CU_MEMORYTYPE_UNIFIED = 4
} CUmemorytype;

typedef enum CUctx_flags_enum {
    CU_CTX_SCHED_AUTO           = 0,
    CU_CTX_SCHED_SPIN           = 1,
    CU_CTX_SCHED_YIELD          = 2,
    CU_CTX_SCHED_BLOCKING_SYNC  = 4,
    CU_CTX_SCHED_MASK           = 7,
    CU_CTX_MAP_HOST             = 8,
    CU_CTX_LMEM_RESIZE_TO_MAX   = 0x10,
    CU_CTX_COREDUMP_ENABLE      = 0x20,
    CU_CTX_USER_COREDUMP_ENABLE = 0x40,
    CU_CTX_SYNC_MEMOPS          = 0x80,
    CU_CTX_FLAGS_MASK           = 0xff,
    CU_CTX_BLOCKING_SYNC        = 4
} CUctx_flags;

typedef enum CUstream_flags_enum {
    CU_STREAM_DEFAULT      = 0,
    CU_STREAM_NON_BLOCKING = 1
} CUstream_flags;

typedef enum CUevent_flags_enum {
    CU_EVENT_DEFAULT        = 0,
    CU_EVENT_BLOCKING_SYNC  = 1,
    CU_EVENT_DISABLE_TIMING = 2,
    CU_EVENT_INTERPROCESS   = 4
} CUevent_flags;

typedef enum CUevent_record_flags_enum {
    CU_EVENT_RECORD_DEFAULT  = 0,
    CU_EVENT_RECORD_EXTERNAL = 1
} CUevent_record_flags;

typedef enum CUevent_wait_flags_enum {
    CU_EVENT_WAIT_DEFAULT  = 0,
    CU_EVENT_WAIT_EXTERNAL = 1
} CUevent_wait_flags;

typedef enum CUjit_option_enum {
    CU_JIT_MAX_REGISTERS                    = 0,
    CU_JIT_THREADS_PER_BLOCK                = 1,
    CU_JIT_WALL_TIME                        = 2,
    CU_JIT_INFO_LOG_BUFFER                  = 3,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES       = 4,
    CU_JIT_ERROR_LOG_BUFFER                 = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES      = 6,
    CU_JIT_OPTIMIZATION_LEVEL               = 7,
    CU_JIT_TARGET_FROM_CUCONTEXT            = 8,
    CU_JIT_TARGET                           = 9,
    CU_JIT_FALLBACK_STRATEGY                = 10,
    CU_JIT_GENERATE_DEBUG_INFO              = 11,
    CU_JIT_LOG_VERBOSE                      = 12,
    CU_JIT_GENERATE_LINE_INFO               = 13,
    CU_JIT_CACHE_MODE                       = 14,
    CU_JIT_NEW_SM3X_OPT                     = 15,
    CU_JIT_FAST_COMPILE                     = 16,
    CU_JIT_GLOBAL_SYMBOL_NAMES              = 17,
    CU_JIT_GLOBAL_SYMBOL_ADDRESSES          = 18,
    CU_JIT_GLOBAL_SYMBOL_COUNT              = 19,
    CU_JIT_LTO                              = 20,
    CU_JIT_FTZ                              = 21,
    CU_JIT_PREC_DIV                         = 22,
    CU_JIT_PREC_SQRT                        = 23,
    CU_JIT_FMA                              = 24,
    CU_JIT_REFERENCED_KERNEL_NAMES          = 25,
    CU_JIT_REFERENCED_KERNEL_COUNT          = 26,
    CU_JIT_REFERENCED_VARIABLE_NAMES        = 27,
    CU_JIT_REFERENCED_VARIABLE_COUNT        = 28,
    CU_JIT_OPTIMIZE_UNUSED_DEVICE_VARIABLES = 29,
    CU_JIT_POSITION_INDEPENDENT_CODE        = 30,
    CU_JIT_MIN_CTA_PER_SM                   = 31,
    CU_JIT_MAX_THREADS_PER_BLOCK            = 32,
    CU_JIT_OVERRIDE_DIRECTIVE_VALUES        = 33,
    CU_JIT_SPLIT_COMPILE                    = 34,
    CU_JIT_NUM_OPTIONS                      = 35
} CUjit_option;

typedef enum CUjitInputType_enum {
    CU_JIT_INPUT_CUBIN     = 0,
    CU_JIT_INPUT_PTX       = 1,
    CU_JIT_INPUT_FATBINARY = 2,
    CU_JIT_INPUT_OBJECT    = 3,
    CU_JIT_INPUT_LIBRARY   = 4,
    CU_JIT_INPUT_NVVM      = 5,
    CU_JIT_NUM_INPUT_TYPES = 6
} CUjitInputType;

typedef enum CUjit_target_enum {
    CU_TARGET_COMPUTE_30   = 0x1e,
    CU_TARGET_COMPUTE_32   = 0x20,
    CU_TARGET_COMPUTE_35   = 0x23,
    CU_TARGET_COMPUTE_37   = 0x25,
    CU_TARGET_COMPUTE_50   = 0x32,
    CU_TARGET_COMPUTE_52   = 0x34,
    CU_TARGET_COMPUTE_53   = 0x35,
    CU_TARGET_COMPUTE_60   = 0x3c,
    CU_TARGET_COMPUTE_61   = 0x3d,
    CU_TARGET_COMPUTE_62   = 0x3e,
    CU_TARGET_COMPUTE_70   = 0x46,
    CU_TARGET_COMPUTE_72   = 0x48,
    CU_TARGET_COMPUTE_75   = 0x4b,
    CU_TARGET_COMPUTE_80   = 0x50,
    CU_TARGET_COMPUTE_86   = 0x56,
    CU_TARGET_COMPUTE_87   = 0x57,
    CU_TARGET_COMPUTE_89   = 0x59,
    CU_TARGET_COMPUTE_90   = 0x5a,
    CU_TARGET_COMPUTE_100  = 0x64,
    CU_TARGET_COMPUTE_110  = 0x6e,
    CU_TARGET_COMPUTE_103  = 0x67,
    CU_TARGET_COMPUTE_120  = 0x78,
    CU_TARGET_COMPUTE_121  = 0x79,
    CU_TARGET_COMPUTE_90A  = 0x1005a,
    CU_TARGET_COMPUTE_100A = 0x10064,
    CU_TARGET_COMPUTE_110A = 0x1006e,
    CU_TARGET_COMPUTE_103A = 0x10067,
    CU_TARGET_COMPUTE_120A = 0x10078,
    CU_TARGET_COMPUTE_121A = 0x10079,
    CU_TARGET_COMPUTE_100F = 0x20064,
    CU_TARGET_COMPUTE_110F = 0x2006e,
    CU_TARGET_COMPUTE_103F = 0x20067,
    CU_TARGET_COMPUTE_120F = 0x20078,
    CU_TARGET_COMPUTE_121F = 0x20079
} CUjit_target;

typedef enum CUjit_fallback_enum {
    CU_PREFER_PTX    = 0,
    CU_PREFER_BINARY = 1
} CUjit_fallback;

typedef enum CUjit_cacheMode_enum {
    CU_JIT_CACHE_OPTION_NONE = 0,
    CU_JIT_CACHE_OPTION_CG   = 1,
    CU_JIT_CACHE_OPTION_CA   = 2
} CUjit_cacheMode;

typedef enum CUlimit_enum {
    CU_LIMIT_STACK_SIZE                       = 0,
    CU_LIMIT_PRINTF_FIFO_SIZE                 = 1,
    CU_LIMIT_MALLOC_HEAP_SIZE                 = 2,
    CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH           = 3,
    CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT = 4,
    CU_LIMIT_MAX_L2_FETCH_GRANULARITY         = 5,
    CU_LIMIT_PERSISTING_L2_CACHE_SIZE         = 6,
    CU_LIMIT_SHMEM_SIZE                       = 7,
    CU_LIMIT_CIG_ENABLED                      = 8,
    CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED       = 9,
    CU_LIMIT_MAX                              = 10
} CUlimit;

typedef enum CUfunc_cache_enum {
    CU_FUNC_CACHE_PREFER_NONE   = 0,
    CU_FUNC_CACHE_PREFER_SHARED = 1,
    CU_FUNC_CACHE_PREFER_L1     = 2,
    CU_FUNC_CACHE_PREFER_EQUAL  = 3
} CUfunc_cache;

typedef enum CUsharedconfig_enum {
    CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE    = 0,
    CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE  = 1,
    CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE = 2
} CUsharedconfig;

typedef enum CUshared_carveout_enum {
    CU_SHAREDMEM_CARVEOUT_DEFAULT    = -1,
    CU_SHAREDMEM_CARVEOUT_MAX_SHARED = 100,
    CU_SHAREDMEM_CARVEOUT_MAX_L1     = 0
} CUshared_carveout;

typedef enum CUcomputemode_enum {
    CU_COMPUTEMODE_DEFAULT           = 0,
    CU_COMPUTEMODE_PROHIBITED        = 2,
    CU_COMPUTEMODE_EXCLUSIVE_PROCESS = 3
} CUcomputemode;

typedef enum CUoccupancy_flags_enum {
    CU_OCCUPANCY_DEFAULT                  = 0,
    CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE = 1
} CUoccupancy_flags;

typedef enum CUmemAllocationType_enum {
    CU_MEM_ALLOCATION_TYPE_INVALID = 0,
    CU_MEM_ALLOCATION_TYPE_PINNED  = 1,
    CU_MEM_ALLOCATION_TYPE_MANAGED = 2,
    CU_MEM_ALLOCATION_TYPE_MAX     = 2147483647
} CUmemAllocationType;

typedef enum CUmemAllocationHandleType_enum {
    CU_MEM_HANDLE_TYPE_FABRIC                = 8,
    CU_MEM_HANDLE_TYPE_MAX                   = 2147483647,
    CU_MEM_HANDLE_TYPE_NONE                  = 0,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
    CU_MEM_HANDLE_TYPE_WIN32                 = 2,
    CU_MEM_HANDLE_TYPE_WIN32_KMT             = 4
} CUmemAllocationHandleType;

typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID           = 0,
    CU_MEM_LOCATION_TYPE_DEVICE            = 1,
    CU_MEM_LOCATION_TYPE_HOST              = 2,
    CU_MEM_LOCATION_TYPE_HOST_NUMA         = 3,
    CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 4,
    CU_MEM_LOCATION_TYPE_MAX               = 2147483647,
    CU_MEM_LOCATION_TYPE_NONE              = 0
} CUmemLocationType;

typedef enum CUmemAllocationGranularity_flags_enum {
    CU_MEM_ALLOC_GRANULARITY_MINIMUM     = 0,
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1
} CUmemAllocationGranularity_flags;

typedef enum CUmemAccess_flags_enum {
    CU_MEM_ACCESS_FLAGS_PROT_NONE      = 0,
    CU_MEM_ACCESS_FLAGS_PROT_READ      = 1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
    CU_MEM_ACCESS_FLAGS_PROT_MAX       = 0x7fffffff
} CUmemAccess_flags;

typedef enum CUmemAllocationCompType_enum {
    CU_MEM_ALLOCATION_COMP_NONE    = 0,
    CU_MEM_ALLOCATION_COMP_GENERIC = 1
} CUmemAllocationCompType;

typedef enum CUmemAttach_flags_enum {
    CU_MEM_ATTACH_GLOBAL = 1,
    CU_MEM_ATTACH_HOST   = 2,
    CU_MEM_ATTACH_SINGLE = 4
} CUmemAttach_flags;

typedef enum CUmemPool_attribute_enum {
    CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES   = 1,
    CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC         = 2,
    CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD                 = 4,
    CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT              = 5,
    CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH                 = 6,
    CU_MEMPOOL_ATTR_USED_MEM_CURRENT                  = 7,
    CU_MEMPOOL_ATTR_USED_MEM_HIGH                     = 8
} CUmemPool_attribute;

typedef enum CUipcMem_flags_enum {
    CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1
} CUipcMem_flags;

typedef enum CUlaunchAttributeID_enum {
    CU_LAUNCH_ATTRIBUTE_IGNORE                               = 0,
    CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW                 = 1,
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE                          = 2,
    CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY               = 3,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION                    = 4,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION    = 6,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT                   = 7,
    CU_LAUNCH_ATTRIBUTE_PRIORITY                             = 8,
    CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP                  = 9,
    CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN                      = 10,
    CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION          = 11,
    CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT              = 12,
    CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE         = 13,
    CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT     = 14,
    CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING       = 16
} CUlaunchAttributeID;

typedef enum CUaccessProperty_enum {
    CU_ACCESS_PROPERTY_NORMAL     = 0,
    CU_ACCESS_PROPERTY_STREAMING  = 1,
    CU_ACCESS_PROPERTY_PERSISTING = 2
} CUaccessProperty;

typedef enum CUsynchronizationPolicy_enum {
    CU_SYNC_POLICY_AUTO          = 1,
    CU_SYNC_POLICY_SPIN          = 2,
    CU_SYNC_POLICY_YIELD         = 3,
    CU_SYNC_POLICY_BLOCKING_SYNC = 4
} CUsynchronizationPolicy;

typedef enum CUclusterSchedulingPolicy_enum {
    CU_CLUSTER_SCHEDULING_POLICY_DEFAULT        = 0,
    CU_CLUSTER_SCHEDULING_POLICY_SPREAD         = 1,
    CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING = 2
} CUclusterSchedulingPolicy;

typedef enum CUlaunchMemSyncDomain_enum {
    CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT = 0,
    CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE  = 1
} CUlaunchMemSyncDomain;

typedef enum CUdevice_P2PAttribute_enum {
    CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK                     = 1,
    CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED                     = 2,
    CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED              = 3,
    CU_DEVICE_P2P_ATTRIBUTE_ACCESS_ACCESS_SUPPORTED              = 4,
    CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED = 5,
    CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED          = 4
} CUdevice_P2PAttribute;

typedef enum CUstreamCaptureStatus_enum {
    CU_STREAM_CAPTURE_STATUS_NONE        = 0,
    CU_STREAM_CAPTURE_STATUS_ACTIVE      = 1,
    CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;

typedef enum CUstreamCaptureMode_enum {
    CU_STREAM_CAPTURE_MODE_GLOBAL       = 0,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    CU_STREAM_CAPTURE_MODE_RELAXED      = 2
} CUstreamCaptureMode;

typedef enum CUgraphInstantiate_flags_enum {
    CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH = 1,
    CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD              = 2,
    CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH       = 4,
    CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY   = 8
} CUgraphInstantiate_flags;

typedef enum CUdriverProcAddress_flags_enum {
    CU_GET_PROC_ADDRESS_DEFAULT                   = 0,
    CU_GET_PROC_ADDRESS_LEGACY_STREAM             = 1,
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2
} CUdriverProcAddress_flags;

typedef enum CUdriverProcAddressQueryResult_enum {
    CU_GET_PROC_ADDRESS_SUCCESS                = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND       = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

typedef enum CUlibraryOption_enum {
    CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0,
    CU_LIBRARY_BINARY_IS_PRESERVED                    = 1,
    CU_LIBRARY_NUM_OPTIONS                            = 2
} CUlibraryOption;

typedef enum CUmoduleLoadingMode_enum {
    CU_MODULE_EAGER_LOADING = 1,
    CU_MODULE_LAZY_LOADING  = 2
} CUmoduleLoadingMode;

typedef enum CUfunctionLoadingState_enum {
    CU_FUNCTION_LOADING_STATE_UNLOADED = 0,
    CU_FUNCTION_LOADING_STATE_LOADED   = 1,
    CU_FUNCTION_LOADING_STATE_MAX      = 2
} CUfunctionLoadingState;

typedef enum CUexecAffinityType_enum {
    CU_EXEC_AFFINITY_TYPE_SM_COUNT = 0,
    CU_EXEC_AFFINITY_TYPE_MAX      = 1
} CUexecAffinityType;

typedef enum CUcigDataType_enum {
    CIG_DATA_TYPE_D3D12_COMMAND_QUEUE = 1,
    CIG_DATA_TYPE_NV_BLOB             = 2
} CUcigDataType;
/* ---- Constants --------------------------------------------------------------------------- */

#define CU_IPC_HANDLE_SIZE 64

#define CU_MEMHOSTALLOC_PORTABLE      0x01
#define CU_MEMHOSTALLOC_DEVICEMAP     0x02
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04

#define CU_MEMHOSTREGISTER_PORTABLE  0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02
#define CU_MEMHOSTREGISTER_IOMEMORY  0x04
#define CU_MEMHOSTREGISTER_READ_ONLY 0x08

#define CU_TRSA_OVERRIDE_FORMAT                0x01
#define CU_TRSF_READ_AS_INTEGER                0x01
#define CU_TRSF_NORMALIZED_COORDINATES         0x02
#define CU_TRSF_SRGB                           0x10
#define CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION 0x20
#define CU_TRSF_SEAMLESS_CUBEMAP               0x40

/* Entries of the extra array of cuLaunchKernel. */
#define CU_LAUNCH_PARAM_END_AS_INT            0x00
#define CU_LAUNCH_PARAM_END                   ((void *)CU_LAUNCH_PARAM_END_AS_INT)
#define CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT 0x01
#define CU_LAUNCH_PARAM_BUFFER_POINTER        ((void *)CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT)
#define CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT    0x02
#define CU_LAUNCH_PARAM_BUFFER_SIZE           ((void *)CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT)

#define CU_LAUNCH_KERNEL_REQUIRED_BLOCK_DIM 1

#define CU_COMPUTE_ACCELERATED_TARGET_BASE 0x10000
#define CU_COMPUTE_FAMILY_TARGET_BASE      0x20000

/* Special streams: the legacy default stream and the calling thread's default stream. */
#define CU_STREAM_LEGACY     ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

#define CU_DEVICE_CPU     ((CUdevice)-1)
#define CU_DEVICE_INVALID ((CUdevice)-2)

/* ---- Structures -------------------------------------------------------------------------- */

typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

typedef struct CUipcMemHandle_st {
    char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle_v1;
typedef CUipcMemHandle_v1 CUipcMemHandle;

typedef struct CUipcEventHandle_st {
    char reserved[CU_IPC_HANDLE_SIZE];
} CUipcEventHandle_v1;
typedef CUipcEventHandle_v1 CUipcEventHandle;

/* Legacy device properties of cuDeviceGetProperties. */
typedef struct CUdevprop_st {
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int sharedMemPerBlock;
    int totalConstantMemory;
    int SIMDWidth;
    int memPitch;
    int regsPerBlock;
    int clockRate;
    int textureAlign;
} CUdevprop_v1;
typedef CUdevprop_v1 CUdevprop;

/* A 2D copy: from (srcXInBytes, srcY) of the source to (dstXInBytes, dstY) of the
 * destination, Height rows of WidthInBytes. */
typedef struct CUDA_MEMCPY2D_st {
    size_t srcXInBytes;
    size_t srcY;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    size_t srcPitch;

    size_t dstXInBytes;
    size_t dstY;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    size_t dstPitch;

    size_t WidthInBytes;
    size_t Height;
} CUDA_MEMCPY2D_v2;
typedef CUDA_MEMCPY2D_v2 CUDA_MEMCPY2D;

/* A 3D copy; reserved0 and reserved1 must be NULL. */
typedef struct CUDA_MEMCPY3D_st {
    size_t srcXInBytes;
    size_t srcY;
    size_t srcZ;
    size_t srcLOD;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    void *reserved0;
    size_t srcPitch;
    size_t srcHeight;

    size_t dstXInBytes;
    size_t dstY;
    size_t dstZ;
    size_t dstLOD;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    void *reserved1;
    size_t dstPitch;
    size_t dstHeight;

    size_t WidthInBytes;
    size_t Height;
    size_t Depth;
} CUDA_MEMCPY3D_v2;
typedef CUDA_MEMCPY3D_v2 CUDA_MEMCPY3D;

typedef struct CUDA_POINTER_ATTRIBUTE_P2P_TOKENS_st {
    unsigned long long p2pToken;
    unsigned int vaSpaceToken;
} CUDA_POINTER_ATTRIBUTE_P2P_TOKENS_v1;
typedef CUDA_POINTER_ATTRIBUTE_P2P_TOKENS_v1 CUDA_POINTER_ATTRIBUTE_P2P_TOKENS;

typedef struct CUmemLocation_st {
    CUmemLocationType type;
    int id; /* device ordinal or NUMA node, as type says */
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;

typedef struct CUmemAccessDesc_st {
    CUmemLocation location;
    CUmemAccess_flags flags;
} CUmemAccessDesc_v1;
typedef CUmemAccessDesc_v1 CUmemAccessDesc;

typedef struct CUmemAllocationProp_st {
    CUmemAllocationType type;
    CUmemAllocationHandleType requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp_v1;
typedef CUmemAllocationProp_v1 CUmemAllocationProp;

typedef struct CUmemPoolProps_st {
    CUmemAllocationType allocType;
    CUmemAllocationHandleType handleTypes;
    CUmemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps_v1;
typedef CUmemPoolProps_v1 CUmemPoolProps;

typedef struct CUaccessPolicyWindow_st {
    void *base_ptr;
    size_t num_bytes;
    float hitRatio;
    CUaccessProperty hitProp;
    CUaccessProperty missProp;
} CUaccessPolicyWindow_v1;
typedef CUaccessPolicyWindow_v1 CUaccessPolicyWindow;

typedef struct CUlaunchMemSyncDomainMap_st {
    unsigned char default_;
    unsigned char remote;
} CUlaunchMemSyncDomainMap;

/* The value of a launch attribute; the member that applies is the one the attribute's
 * CUlaunchAttributeID names. */
typedef union CUlaunchAttributeValue_union {
    char pad[64];
    CUaccessPolicyWindow accessPolicyWindow;
    int cooperative;
    CUsynchronizationPolicy syncPolicy;
    struct {
        unsigned int x;
        unsigned int y;
        unsigned int z;
    } clusterDim;
    CUclusterSchedulingPolicy clusterSchedulingPolicyPreference;
    int programmaticStreamSerializationAllowed;
    struct {
        CUevent event;
        int flags;
        int triggerAtBlockStart;
    } programmaticEvent;
    struct {
        CUevent event;
        int flags;
    } launchCompletionEvent;
    int priority;
    CUlaunchMemSyncDomainMap memSyncDomainMap;
    CUlaunchMemSyncDomain memSyncDomain;
    struct {
        unsigned int x;
        unsigned int y;
        unsigned int z;
    } preferredClusterDim;
    struct {
        int deviceUpdatable;
        CUgraphDeviceNode devNode;
    } deviceUpdatableKernelNode;
    unsigned int sharedMemCarveout;
    unsigned int nvlinkUtilCentricScheduling;
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
    CUlaunchAttributeID id;
    char pad[8 - sizeof(CUlaunchAttributeID)];
    CUlaunchAttributeValue value;
} CUlaunchAttribute;

/* The launch of cuLaunchKernelEx. */
typedef struct CUlaunchConfig_st {
    unsigned int gridDimX;
    unsigned int gridDimY;
    unsigned int gridDimZ;
    unsigned int blockDimX;
    unsigned int blockDimY;
    unsigned int blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;

typedef struct CUexecAffinitySmCount_st {
    unsigned int val;
} CUexecAffinitySmCount_v1;
typedef CUexecAffinitySmCount_v1 CUexecAffinitySmCount;

typedef struct CUexecAffinityParam_st {
    CUexecAffinityType type;
    union {
        CUexecAffinitySmCount smCount;
    } param;
} CUexecAffinityParam_v1;
typedef CUexecAffinityParam_v1 CUexecAffinityParam;

typedef struct CUctxCigParam_st {
    CUcigDataType sharedDataType;
    void *sharedData;
} CUctxCigParam;

/* The parameters of cuCtxCreate (cuCtxCreate_v4). */
typedef struct CUctxCreateParams_st {
    CUexecAffinityParam *execAffinityParams;
    int numExecAffinityParams;
    CUctxCigParam *cigParams;
} CUctxCreateParams;

/* ---- Callbacks --------------------------------------------------------------------------- */

typedef void(CUDA_CB *CUhostFn)(void *userData);
typedef void(CUDA_CB *CUstreamCallback)(CUstream hStream, CUresult status, void *userData);
typedef size_t(CUDA_CB *CUoccupancyB2DSize)(int blockSize);

/* ---- Errors ------------------------------------------------------------------------------ */

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr);
CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr);

/* ---- Initialization and version ---------------------------------------------------------- */

CUresult CUDAAPI cuInit(unsigned int Flags);
CUresult CUDAAPI cuDriverGetVersion(int *driverVersion);

/* ---- Devices ----------------------------------------------------------------------------- */

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal);
CUresult CUDAAPI cuDeviceGetCount(int *count);
CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev);
CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
CUresult CUDAAPI cuDeviceGetProperties(CUdevprop *prop, CUdevice dev);
CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev);
CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev);
CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId);
CUresult CUDAAPI cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice, CUdevice dstDevice);
CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev);
CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev);
CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev);
CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool);

/* ---- Primary contexts -------------------------------------------------------------------- */

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);

/* ---- Contexts and the per-thread context stack ------------------------------------------- */

/* cuCtxCreate is cuCtxCreate_v4 in CUDA 13.0 (its symbol); ctxCreateParams may be NULL. */
CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx);
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx);
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx);
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx);
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx);
CUresult CUDAAPI cuCtxGetDevice(CUdevice *device);
CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx);
CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags);
CUresult CUDAAPI cuCtxSetFlags(unsigned int flags);
CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId);
CUresult CUDAAPI cuCtxSynchronize(void);
CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx);
CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value);
CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit);
CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *pconfig);
CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config);
CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version);
CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority);
CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags);
CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext);

/* ---- Memory ------------------------------------------------------------------------------ */

CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total);
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes);
CUresult CUDAAPI cuMemFree(CUdeviceptr dptr);
CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize);
CUresult CUDAAPI cuMemFreeHost(void *p);
CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags);
CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p);
CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
CUresult CUDAAPI cuMemHostUnregister(void *p);

/* ---- Memset ------------------------------------------------------------------------------ */

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult CUDAAPI cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N);
CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult CUDAAPI cuMemsetD2D8(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height);
CUresult CUDAAPI cuMemsetD2D16(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height);
CUresult CUDAAPI cuMemsetD2D32(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height);
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height, CUstream hStream);
CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height, CUstream hStream);
CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height, CUstream hStream);

/* ---- Memcpy ------------------------------------------------------------------------------ */

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount);
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D *pCopy);
CUresult CUDAAPI cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *pCopy);
CUresult CUDAAPI cuMemcpy3D(const CUDA_MEMCPY3D *pCopy);
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream);
CUresult CUDAAPI cuMemcpy3DAsync(const CUDA_MEMCPY3D *pCopy, CUstream hStream);

/* ---- Pointer attributes ------------------------------------------------------------------ */

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr);
CUresult CUDAAPI cuPointerSetAttribute(const void *value, CUpointer_attribute attribute, CUdeviceptr ptr);

/* ---- Modules ----------------------------------------------------------------------------- */

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname);
CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image);
CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options, void **optionValues);
CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin);
CUresult CUDAAPI cuModuleUnload(CUmodule hmod);
CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode);
CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule mod);
CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions, CUmodule mod);
CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name);

/* ---- Libraries and kernels --------------------------------------------------------------- */

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions);
CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions);
CUresult CUDAAPI cuLibraryUnload(CUlibrary library);
CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name);
CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib);
CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib);
CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library);
CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name);
CUresult CUDAAPI cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name);
CUresult CUDAAPI cuLibraryGetUnifiedFunction(void **fptr, CUlibrary library, const char *symbol);
CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel);
CUresult CUDAAPI cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel);
CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev);
CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev);
CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev);
CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc);
CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize);

/* ---- Functions --------------------------------------------------------------------------- */

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value);
CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config);
CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc);
CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc);
CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize);
CUresult CUDAAPI cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function);
CUresult CUDAAPI cuFuncLoad(CUfunction function);

/* ---- Launch ------------------------------------------------------------------------------ */

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra);
CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams);
CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);

/* ---- Occupancy --------------------------------------------------------------------------- */

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize);
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags);
CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func, CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit);
CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func, CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit, unsigned int flags);
CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks, int blockSize);
CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func, const CUlaunchConfig *config);
CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config);

/* ---- Streams ----------------------------------------------------------------------------- */

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags);
CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority);
CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority);
CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int *flags);
CUresult CUDAAPI cuStreamGetId(CUstream hStream, unsigned long long *streamId);
CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx);
CUresult CUDAAPI cuStreamGetDevice(CUstream hStream, CUdevice *device);
CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags);
CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags);
CUresult CUDAAPI cuStreamQuery(CUstream hStream);
CUresult CUDAAPI cuStreamSynchronize(CUstream hStream);
CUresult CUDAAPI cuStreamDestroy(CUstream hStream);

/* ---- Stream capture and graphs (basics) -------------------------------------------------- */

CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags);
CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph);
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags);
CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec);

/* ---- Events ------------------------------------------------------------------------------ */

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags);
CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags);
CUresult CUDAAPI cuEventQuery(CUevent hEvent);
CUresult CUDAAPI cuEventSynchronize(CUevent hEvent);
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult CUDAAPI cuEventDestroy(CUevent hEvent);

/* ---- Inter-process handles --------------------------------------------------------------- */

CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr);
CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr);
CUresult CUDAAPI cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event);
CUresult CUDAAPI cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle);

/* ---- Virtual memory management ----------------------------------------------------------- */

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags);
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags);
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags);
CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
CUresult CUDAAPI cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr);
CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags option);
CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle);
CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr);
CUresult CUDAAPI cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType handleType, unsigned long long flags);
CUresult CUDAAPI cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle, CUmemAllocationHandleType shHandleType);

/* ---- Stream-ordered allocation and memory pools ------------------------------------------ */

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps);
CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool);
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep);
CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count);
CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location);
CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location, CUmemAllocationType type);
CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type);
CUresult CUDAAPI cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool);

/* ---- Driver entry points ----------------------------------------------------------------- */

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus);
CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId);

#ifdef __cplusplus
}
#endif

#endif /* GPUOS_INCLUDE_CUDA_H */
