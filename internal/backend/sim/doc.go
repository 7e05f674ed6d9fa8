// Package sim is the software GPU: a backend.Backend whose devices are host
// memory plus a PTX interpreter, with streams that really order their work,
// events, and a deterministic cost model. It makes the whole gpuos stack —
// shim, guard, scheduler, policies, memory manager — testable without a GPU.
//
// # What it models
//
//   - An H100-like device (sm_90): DeviceInfo.Attributes holds every
//     CUdevice_attribute an H100 SXM5 reports, with the configured memory,
//     SM count and clock.
//   - VMM memory exactly as backend.Device documents it: reservations in
//     [VAStart, VAEnd), physical chunks counted against Options.Memory,
//     mappings of whole granules that start inaccessible until SetAccess, and
//     aliasing (one chunk mapped twice is one memory). Kernels and copies
//     reach memory through a page table keyed by granule; kernels through a
//     small lock-free translation cache (see BenchmarkSlice).
//   - Module variables live in the sim's own region of the address space,
//     [0x6F00_0000_0000, VAEnd), outside every reservation, in whole granules
//     counted against Options.Memory.
//   - Engines: one compute engine (kernels one at a time, a kernel's blocks in
//     parallel on Options.Workers goroutines; device-to-device copies and
//     memsets), one host-to-device and one device-to-host copy engine. Each
//     engine runs its commands in the order they were enqueued on the device.
//     With Options.ConcurrentKernels the compute engine is instead
//     Options.SMs SMs of one block each, and kernels of different streams
//     run side by side when SMs are free (see "Concurrent kernels").
//   - Streams: a goroutine per stream runs its commands in order. Events,
//     cross-stream and cross-device waits, and callbacks (run on the stream's
//     goroutine with the stream's first error) behave as in CUDA. A stream's
//     errors are sticky: once its work failed, Query and Synchronize report
//     that error until it is destroyed. Device.Synchronize reports only a
//     lost or closed context.
//   - The host's CPUs: every command runs on goroutines of this process, so
//     a Device is a backend.HostExecutor, and the driver's pollers waiting
//     for its work yield their CPU and their goroutine's P to it.
//   - Host memory: AllocHost and RegisterHost memory is "pinned": copies from
//     and to it are asynchronous. A copy from other memory is staged before
//     the call returns; a copy into it completes before the call returns.
//   - Faults: a kernel fault, or a copy that reaches memory no longer mapped
//     when it runs, is a device fault. By default it is fatal, as on an
//     H100: the context is lost, every later call fails with an error that
//     matches backend.ErrContextLost and names the first fault, queued work is
//     dropped (callbacks still run, with that error), and the ordinal cannot be
//     opened again by this backend (a real GPU needs a new process). Other
//     devices of the backend are not affected. With Options.NonFatalFaults
//     only the launch fails: its stream reports the error from then on
//     (Query, Synchronize, callbacks) and so do events recorded after it.
//
// # Virtual time
//
// Every command has a virtual start and end in nanoseconds since Open. A
// command starts at the latest of: the end of the previous command on its
// stream, the end of the previous command on its engine, the times of the
// events its stream waits for, and the host floor (the latest device time
// the host had observed through a synchronization when the command was
// enqueued). It ends at start + cost, where the cost comes from the
// CostModel: for a kernel, LaunchOverhead plus the larger of its compute time
// (thread-instructions over min(SMs, blocks) × IssuePerSMPerClock × clock) and
// its memory time (global bytes over GlobalBytesPerSecond); for a copy or a
// memset, CopyOverhead plus bytes over the direction's bandwidth (pinned or
// pageable for host copies). Records, waits and callbacks cost nothing. An
// event records the end of the work before it on its stream, and Elapsed is a
// difference of those times. All of it is integer arithmetic over counts the
// interpreter reports, and engines take commands in enqueue order, so a
// program that enqueues in a fixed order gets exactly the same times on
// every run and machine. (Device).VirtualTime and (*Stream).VirtualTime
// expose the clock to the scheduler.
//
// # Concurrent kernels
//
// A GPU runs kernels of different streams at once when SMs are free, so two
// tenants' kernels overlap and finish in an order that is not the order they
// were issued — what a scheduler that times work with events must cope with.
// Options.ConcurrentKernels models it: kernels still reach the compute
// engine in enqueue order, but there each block takes the earliest time an
// SM is idle long enough for it (gaps included; on a tie the SM that became
// idle last), no earlier than its kernel's arrival (the latest of its stream's
// previous command, awaited events and the host floor) plus LaunchOverhead,
// and runs for the kernel's time alone divided by its waves
// (ceil(blocks / SMs)). A kernel alone thus takes what it takes one at a
// time; a kernel that leaves SMs free lets the next one start beside it. The
// blocks of a wave start together: a GPU's block scheduler reaches them one
// after another, so there kernels that each fill the device still overlap
// at their edges, which the sim does not show.
// HostTime, not VirtualTime, is then "now" for new work: VirtualTime is the
// end of everything placed, which may be far ahead. HostTime moves whenever
// any host goroutine observes work that ended later, so the time between two
// enqueues of one goroutine depends on how the host's threads ran; a
// command's placement does not: (*Device).TracePlacements reports, for each
// command placed, the HostTime it was enqueued at, when its stream let it
// start, and when its first block started and its last ended, from which a
// test measures what the command waited for on the device alone.
//
// With ConcurrentKernels the device is also a backend.Partitioner, as CUDA's
// green contexts make a GPU: (*Device).Partition(reserve) leaves SMs
// [0, reserved) out, reserved being reserve rounded up to 8 SMs (sm_90's
// granularity; half the SMs on a device of fewer than 16), and its streams'
// kernels, memsets and device-to-device copies run only on the other SMs,
// their time alone taken on that many SMs. Streams made by NewStream still
// use every SM, so a kernel of theirs finds the reserved SMs free however
// much work the partitions' streams placed. %smid (block index mod SMs) does
// not follow placement, in a partition or not.
//
// # What it does not model
//
//   - No SASS: a cubin, or a fatbin without PTX for sm_90 or lower, is
//     ErrSASS (matching backend.ErrUnsupported).
//   - No preemption or priority between streams: priorities are recorded
//     (Stream.Priority) for the scheduler. Because an engine takes commands
//     in enqueue order, a command that waits for another stream holds back
//     later commands on its engine (the real hardware could run them
//     first). With ConcurrentKernels a block placed keeps its SM: a kernel
//     of a more urgent stream enqueued later gets only the SMs left, where a
//     GPU would give it the next SM to free ahead of earlier kernels'
//     pending blocks. Without the option, kernels never overlap.
//   - No caches, no occupancy limits, no clock throttling, no ECC, no
//     mapped host memory (kernels cannot read host memory), no managed
//     memory, no peer access.
//   - An access that straddles two granules backed by different chunks fails
//     (a naturally aligned access never straddles).
//
// # Lock order
//
// Device.qmu → Stream.mu, and hostMem.mu → hostRegistry.mu. Every other lock
// — simBackend.mu, addressSpace.mu (page table, reservations, chunk
// accounting), module.mu — is a leaf, never held while taking another. No
// lock is held while a stream goroutine waits for another command, runs a
// kernel or a copy, or calls a callback; a command's results are published
// by closing its done channel. Kernels translate addresses through memView
// without locks, falling back to addressSpace.mu (read) on a cache miss.
package sim
