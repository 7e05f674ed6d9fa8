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
//     anonymous mappings today, behind HostAllocator so that the daemon's
//     shared pinned staging can replace them.
//   - Streams: the legacy default stream, the per-thread default streams and
//     every stream created without CU_STREAM_NON_BLOCKING share one daemon
//     stream per session (the "blocking group"), which gives CUDA's legacy
//     synchronization by construction; each non-blocking stream has a daemon
//     stream of its own. Host functions (cuLaunchHostFunc, cuStreamAddCallback)
//     run on a worker per daemon stream after a fence recorded behind the work
//     before them, and later submissions to that daemon stream wait for them.
//   - Events (a gpuos fence per record), module loading (an image larger
//     than one LoadProgram request, such as cuRAND's fat binary, is cut down
//     to the entries the device can use: trim.go), kernel parameter packing
//     from the layout the daemon returns, launch validation, function
//     attributes and occupancy (cluster occupancy answers for one-block
//     clusters, the only ones gpuos launches), pointer attributes.
//   - Libraries (library.go): CUDA's context-independent loading. A
//     CUlibrary needs no context; it is loaded into a device's session when
//     its code is first needed there (a CUkernel's function, a launch, a
//     global, its module), and kernel names are checked against the image
//     itself (kernelnames.go), so the runtime's start-up lookups load
//     nothing. Libraries outlive contexts.
//   - The private export tables the CUDA runtime asks cuGetExportTable for:
//     their layout (exporttable.go), context-local storage, the integrity
//     check (integrity.go) and the fat binary wrapper (fatbin.go). The C side
//     of the tables lives in cmd/libcuda.
//   - The one conversion of gpuos errors into CUresult values (result.go).
//   - The formatting of the full call trace (calltrace.go): cmd/libcuda
//     captures each call's argument registers under GPUOS_SHIM_TRACE=2 and
//     FormatCall shows them by the parameter list from include/cuda.h,
//     reading output values only through a Memory that cannot fault.
//
// # Contexts
//
// As the driver API documents: a thread with no context gets
// CUDA_ERROR_INVALID_CONTEXT; work in a current context that was destroyed
// (by another thread) or in a primary context that is not retained (the
// runtime's interface hands out its handle before retaining it; the last
// release and a reset deactivate it) gets CUDA_ERROR_CONTEXT_IS_DESTROYED.
// Properties (device, flags, limits, id, API version, context-local
// storage) can be read and set in an inactive primary context.
//
// Every method returns a CUresult; none panics on bad input. Unimplemented
// entry points never reach this package: cmd/libcuda answers them with
// CUDA_ERROR_NOT_SUPPORTED.
//
// # Lock order
//
// Driver.initMu, then device.mu (held while a device's session is opened),
// then library.mu (held while the library is loaded into a session, so that
// it is loaded once per device), then module.mu (held while the daemon looks
// a kernel up, so that a name resolves to one handle), then the leaves: the
// handle tables' locks (table.mu), memMap.mu, hostMap.mu, ctxObj.mu,
// event.mu, function.mu and a daemon stream's dstream.mu. No leaf is held
// while calling the daemon or the application (host functions and
// destructors run with no lock held).
//
// # Streams
//
// CUDA's legacy default stream synchronizes with every blocking stream. The
// shim gets that by construction: the legacy default stream, every
// per-thread default stream (which CUDA also makes a blocking stream) and
// every stream created without CU_STREAM_NON_BLOCKING submit to one daemon
// stream per session. That serializes work CUDA would let overlap between
// blocking streams, which CUDA permits; waits on events always refer to
// records already submitted, so it cannot deadlock.
package shim
