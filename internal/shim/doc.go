// Package shim implements the CUDA driver API over the gpuos protocol: the
// semantics behind the drop-in libcuda.so.1 that cmd/libcuda builds. cmd/libcuda
// owns the C ABI (exported symbols, C types, callbacks into C, thread-local
// storage); this package owns what the calls mean, in Go, on client.Session.
//
// # What it owns
//
//   - One Driver per process: initialization (cuInit dials the daemon named by
//     GPUOS_SOCKET, GPUOS_TOKEN and GPUOS_TENANT and lists its devices), one
//     gpuos session per device, opened when a context on it is first used.
//   - The handles the application sees — contexts, streams, events, modules,
//     functions, libraries, kernels — which are the shim's own opaque values
//     (see handle.go), never the daemon's.
//   - Per-thread context stacks, keyed by a Thread token that cmd/libcuda keeps
//     in C thread-local storage.
//   - Device memory bookkeeping: every allocation's address range, so that
//     pointers are validated here (exact CUresult values) before anything is
//     sent, and generic copies (cuMemcpy, CU_MEMORYTYPE_UNIFIED) can tell
//     device addresses from host ones.
//   - Host memory the shim hands out (cuMemHostAlloc and friends): page-aligned
//     anonymous mappings today, behind hostAllocator so that the daemon's
//     shared pinned staging can replace them.
//   - Streams: the legacy default stream, the per-thread default streams and
//     every stream created without CU_STREAM_NON_BLOCKING share one daemon
//     stream per session (the "blocking group"), which gives CUDA's legacy
//     synchronization by construction; each non-blocking stream has a daemon
//     stream of its own. Host functions (cuLaunchHostFunc, cuStreamAddCallback)
//     run on a worker per daemon stream after a fence recorded behind the work
//     before them, and later submissions to that daemon stream wait for them.
//   - Events (a gpuos fence per record), module and library loading, kernel
//     parameter packing from the layout the daemon returns, launch validation,
//     function attributes and occupancy, pointer attributes.
//   - The private export tables the CUDA runtime asks cuGetExportTable for:
//     their layout (exporttable.go), context-local storage, the integrity
//     check (integrity.go) and the fat binary wrapper (fatbin.go). The C side
//     of the tables lives in cmd/libcuda.
//   - The one conversion of gpuos errors into CUresult values (result.go).
//
// Every method returns a CUresult; none panics on bad input. Unimplemented
// entry points never reach this package: cmd/libcuda answers them with
// CUDA_ERROR_NOT_SUPPORTED.
//
// # Lock order
//
// Driver.initMu, then device.mu, then the handle tables' and memory maps' own
// locks (table.mu, memMap.mu, hostMap.mu, context.mu, event.mu, function.mu),
// which are leaves: no lock is held while calling the daemon except device.mu
// during session open and event.mu while an event's fence is replaced. A
// daemon stream's gate (dstream.mu) is a leaf too; host functions run with no
// lock held.
package shim
