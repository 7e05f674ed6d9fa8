// Package cuda is the real NVIDIA backend: a backend.Backend that drives the
// GPU through the CUDA driver API of libcuda.so.1, loaded with dlopen at run
// time. No CUDA header or toolkit is needed to build it: driver_cgo.go
// declares the few C types and function-pointer types it uses, written from
// the documented ABI that internal/abi/cuda mirrors (the tests check the
// numbers against it), and resolves every entry point by the versioned
// symbol the 580 driver exports (cuMemGetInfo_v2, cuStreamDestroy_v2, ...).
// Without cgo the package still builds and Open returns ErrNoCgo.
//
// # Loading
//
// Open loads $GPUOS_LIBCUDA if set, else libcuda.so.1 (by soname), else
// /usr/local/nvidia/lib64/libcuda.so.1. It refuses gpuos's own drop-in
// libcuda (the library exports gpuos_shim_version): the driver process must
// never drive the GPU through gpuos. A library that lacks one of the seven
// entry points without which nothing works is refused with ErrMissingSymbol;
// any other missing entry point fails only the operations that need it,
// with an Unsupported error naming it (MissingEntryPoints lists them).
//
// # Contexts and threads
//
// Each Device holds the device's primary context (cuDevicePrimaryCtxRetain),
// not one of its own: it is what the CUDA runtime and the libraries on it
// use, so a library loaded into the driver process shares it, and
// cuCtxCreate's signature changed in CUDA 13 (cuCtxCreate_v4) while the
// primary context's calls did not. A process opens a device once; Close
// releases the context. Goroutines move between OS threads and every thread
// that calls CUDA needs the context current: each operation is one C call
// that first compares a thread-local context generation and calls
// cuCtxSetCurrent only when the thread has not served this context yet.
// Nothing else in the process may change a thread's current context (the
// driver process has no other CUDA user). $GPUOS_CUDA_SCHED, if set, gives
// the primary context's scheduling flag before it is retained (how a thread
// in cuStreamSynchronize waits: spin, yield, blocking or auto); unset, the
// driver's default stays (spin, with fewer contexts than CPUs).
//
// # Memory
//
// Device memory is the VMM API only: Reserve (cuMemAddressReserve),
// CreateChunk (cuMemCreate, pinned device memory of this device), Map,
// SetAccess (read-write for this device) and their inverses. The backend
// keeps its own table of reservations and mappings (addressSpace) and checks
// every VMM call and every copy or memset against it before the driver sees
// it: misuse the driver would accept (releasing a chunk still mapped) or
// that would lose the context (a copy into mapped but inaccessible memory)
// is an InvalidArgument error instead, exactly as on the sim backend. Module
// variables returned by Global are valid copy targets too.
//
// Host memory from AllocHost (cuMemHostAlloc, portable) or RegisterHost
// (cuMemHostRegister, on memory the caller mapped itself) is "pinned": copies
// from and to it are asynchronous. A copy from or to any other memory is
// enqueued and waited for (cuStreamSynchronize) in the same C call, so the
// driver never holds Go memory after a call returns.
//
// A stream's fences (backend.Fencer) are cuStreamWriteValue32_v2 writes of
// its next sequence number into a word of mapped host memory of its own
// (fence.go), which the host polls; words come from 4 KiB pages, 64 bytes
// apart, and a destroyed stream's word is reused only once its last fence
// was reached.
//
// # Faults
//
// A result that leaves the context unusable (an illegal address, a launch
// failure, a trap, ECC, ...; see lostResults) latches the device lost: that
// error, which matches backend.ErrContextLost and carries the CUresult, is
// what every later call returns, and the ordinal cannot be opened again in
// this process. On an H100 only a new process recovers, so the driver process
// exits and the manager restarts it.
//
// # Lock order
//
// proc.mu (the process's open and lost devices) → Device.vmmMu (held across
// driver VMM calls) → addressSpace.mu; Device.hostMu → hostRegistry.mu;
// module.mu → addressSpace.mu; streamFences.mu → fencePool.mu → (a new
// page) Device.hostMu. Device.mu (the sets of live objects) and
// hostMem.mu are leaves. Objects the driver frees (the context, streams,
// events, modules) are guarded by a liveness counter instead of a lock: a
// call enters it, Destroy/Unload/Close end it and wait for the calls inside,
// so a handle is never freed under a running call nor used after.
package cuda
