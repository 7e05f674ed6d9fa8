// Package mem is the memory manager of a gpuos driver process: it owns the
// device memory of one backend context and hands it to sessions. It owns
// per-session address windows, the allocations inside them, per-tenant
// quotas, sharing of allocations between windows, a pool of freed chunks and
// the shared sink chunk, and swapping chunks to host memory when the device
// is oversubscribed.
//
// # Windows and guard ranges
//
// Each session gets a Window: a range of device addresses reserved with
// Device.Reserve, a power of two in size (at least Options.MinWindow and 1.5
// times its tenant's quota, or the device limit if it has none) and aligned
// to its size. Every allocation and attachment of the session lives in it.
//
// GuardRange is [Base, Base+2^k): every granule in it is mapped and
// accessible — a chunk where an allocation or attachment lives, the one
// shared sink chunk elsewhere — so a kernel access confined to it (the PTX
// guard masks addresses into it) can never fault. It starts at the size of
// the sink chunk, rounded up to a power of two, and when an allocation ends
// past it, it doubles (or more) to cover it: the new granules are mapped to
// the sink and one SetAccess covers them together with the allocation's
// chunk. It never shrinks while the window is open; allocation is first-fit
// from the lowest address, which keeps it small.
//
// Cost on a real GPU: cuMemSetAccess costs about 35 µs per separately mapped
// chunk in its range and cuMemMap about 1 µs, so every change makes exactly
// one SetAccess call over the granules it mapped, and a larger
// Options.SinkChunk makes a guard range of fewer mappings. Placing a chunk on
// sink granules unmaps their sink mappings (whole, as the VMM API requires),
// maps the chunk, maps the sink again over the remainders and grants access
// once; freeing unmaps the chunk and maps the sink back.
//
// A granule being remapped is briefly unmapped, and on a GPU any access to
// it then faults and poisons the whole context. So before any change inside
// a window's guard range the manager calls Options.Quiesce, which must stop
// the session's kernels until it resumes them; growth beyond the range needs
// no quiescing (no kernel can reach it yet), nor does a sub-allocation from a
// slab the window already holds.
//
// # Allocations
//
// Alloc aligns every allocation to 256 bytes, as cudaMalloc does. Sizes
// below the granularity are sub-allocated from slabs — one-granule chunks the
// window holds — with best fit inside the lowest slab that has room and
// coalescing on Free; such an Alloc+Free makes no backend call at all. One
// empty slab per window is kept. Larger allocations, and those made with
// Shareable, get one chunk of their own, rounded up to the granularity.
// Freed chunks go to a per-manager pool (Options.PoolLimit bytes, reused by
// exact size) so alloc/free cycles do not create chunks each time; the pool
// is trimmed, largest chunks first, whenever a new chunk would pass the
// device limit, and when the backend itself reports out-of-memory.
//
// In one driver process, memory one tenant freed may come back to another:
// a chunk whose last user was another tenant (or several, after sharing) is
// zeroed with a Memset before it is mapped for use; so are fresh chunks unless
// Options.FreshChunksZeroed says the backend zeroes them. Reuse by the same
// tenant is not zeroed, as natively.
//
// # Accounting
//
// A tenant is charged, across all its windows, the memory each allocation
// holds exclusively: a sub-allocation its size rounded up to 256 bytes, an
// allocation with its own chunk the whole chunk (size rounded up to the
// granularity). Attachments cost their receiver nothing: shared bytes are
// charged to the owner once. Slab slack, the pool and the sink are charged to
// nobody; they count, with everything else, against the device limit
// (Options.DeviceMemoryLimit, at most the device's memory). Going over the
// quota is ErrQuotaExceeded on every path; reaching the device limit, or a
// window without a free range large enough, is ErrOutOfMemory. Tenant.MemoryInfo
// is the tenant's view for cuMemGetInfo.
//
// # Sharing
//
// Attach maps the chunk of an allocation into another window (or the same):
// both addresses reach the same memory. Only allocations with chunks of their
// own can be attached (Shareable, or at least a granule); a sub-allocation is
// ErrNotShareable, since its chunk holds its neighbours. An attachment ends
// when it is freed, when its window closes, or when the owner frees the
// source: then every attachment is revoked first — unmapped, its granules
// given back to the sink so the receivers' guard ranges stay whole (their
// kernels read the sink instead of faulting) — and the receiver's Free of it
// succeeds once. A read-only attachment is only recorded (ReadOnly) for the
// driver to enforce on copies; the mapping is writable. Hardware read-only
// mapping is future work: the backend's SetAccess has no protection argument,
// and a read-only mapping would turn a guarded kernel's stray write into a
// context-killing fault unless the guard knew which ranges are read-only.
//
// What the sink means for tenants: it is one chunk mapped at many places in
// every window, so writes a kernel makes outside its allocations (but inside
// its guard range) can be read by any session's stray reads. It leaks
// nothing a tenant did not write out of bounds itself; a sink per tenant
// would remove even that at the cost of a chunk per tenant.
//
// # Swapping
//
// With Options.SwapLimit set, tenants' allocations together may exceed the
// device limit. When a chunk would not fit (after the pool is trimmed), the
// manager evicts victims: Candidates lists the resident chunks backing
// allocations and slabs, least recently used first (each chunk records its
// owner window and a last-use stamp: Alloc, Resolve, Attach, and Window.Touch
// when the driver dispatches), and the VictimChooser (Options.Victims, the
// on_pressure hook; built in: LowestPriorityLRU) picks among them. Evicting a
// chunk quiesces every window it is mapped in (its owner's and those it is
// attached in), copies it to pinned host memory on the manager's eviction
// stream, replaces its mappings by the sink (so guard ranges stay whole: a
// stray access reads the sink rather than faulting) and gives the physical
// memory back to the pool, where the allocation or swap-in that needed it
// takes it. The allocation keeps its region and address; Resolve and
// accounting do not change. Other sessions' work runs on meanwhile: the
// copies use their own stream.
//
// A window with an evicted chunk is non-resident (Resident is false) and
// keeps the quiesce of that eviction: its session's work must not reach the
// device. Window.MakeResident brings every chunk it maps back at the same
// addresses — a chunk from the pool or a new one, mapped in every window that
// maps it, the data copied back on the swap-in stream — and resumes the
// windows that became resident once the copies are done. The driver calls it
// before dispatching the session's work (its pager). Swap-in copies are
// waited for once per MakeResident, so the eviction a swap-in needs (device
// to host) overlaps the copy of the chunk before it (host to device). Chunks
// made resident are protected from eviction for Options.MinResidency, so a
// session runs before it can be evicted again; while only protected chunks
// could make room, MakeResident waits and an allocation sleeps.
//
// Evictions are pipelined: one begins by quiescing the windows that map its
// chunk and enqueuing the copy to host memory on the eviction stream, with
// an event after it, and finishes (oldest first) by waiting for that event,
// mapping the sink in the chunk's place and giving the chunk to the pool.
// makeRoom begins as many evictions as the need calls for, so their copies
// run back to back; a MakeResident pass also begins, once it has the chunk
// it asked for, evictions for the next chunks it will need (up to twice that
// chunk, into host memory already pinned only), so the next victim's copy to
// the host runs while this chunk is remapped and copied back: the eviction
// stream does not wait for the host, and copies in both directions overlap.
// Evictions under way never outlive the eviction lock: a pass finishes them
// before it lets go of it. On the lent H100 (run 8) remapping a GiB took
// about 1 ms with no copy in flight and about 17 ms with swap-in copies in
// flight: the driver's VMM calls wait for the device's copies, so a pass's
// remaps cannot hide behind its copies, and a pass moving 8 GiB each way
// took about 210 ms (80 GB/s of both directions together).
//
// Host swap memory is pinned (AllocHost, or with Options.SwapPinRegister
// memory the store maps itself and has the backend register: page-locked
// either way, so the copies are asynchronous DMA) in pieces of at most
// Options.SwapPiece, kept for reuse,
// and bounded by SwapLimit; an eviction that does not fit fails the
// allocation that needed it with ErrOutOfMemory. An eviction enqueues its
// whole chunk, run after run of the slot's blocks, on the eviction stream;
// two events around the copies time it on the device (SwapEvent.Copy).
//
// Pinning is the slow part: on the lent H100's host cuMemHostAlloc pins
// about 2.5 GB/s (no faster on several threads), registering memory the
// store mapped itself about 9.4 GB/s, while the copy runs at 55 GB/s, so an
// eviction that has to pin its buffers first runs at the pinning rate. So the store pins ahead,
// on Options.SwapPinners goroutines at once: Options.SwapReserve from the
// start (OnSwap is told when it is pinned: SwapReserved), and once
// evictions have begun, enough full pieces to keep Options.SwapAhead free.
// An eviction that finds no free buffer first reuses those of swap-ins
// whose copies have landed (waiting for them oldest first: milliseconds),
// then waits for pieces being pinned ahead, and pins what it still lacks
// itself (most of a second per GiB). What an eviction still pins is
// reported apart from its copy (SwapEvent.Pin, Pinned), and so are its
// quiescing and remapping (SwapEvent.Quiesce, Remap). Trim frees the kept
// buffers and stops pinning ahead until the next eviction.
//
// Everything a window maps must fit on the device at once beside the sink
// (else its session could never run): an allocation or attachment past that
// is ErrOutOfMemory. Freeing an evicted allocation, or closing its window,
// drops its host copy. Options.OnSwap reports every move (audit, counters).
//
// An empty slab (the one a window keeps for reuse) is released rather than
// evicted, and an evicted slab that becomes empty is dropped with its host
// copy. When the device itself refuses a chunk the accounting thought would
// fit (memory gpuos does not manage: module variables, other processes), the
// manager evicts all the same and tries again. OnSwap also reports each
// MakeResident pass (Resident: bytes in, bytes evicted for it, its time, the
// device time of its copies) for the audit log and the benchmarks.
//
// There is no on-device swap area: evicted data goes straight to host memory.
//
// # Concurrency and lock order
//
// All methods are safe for concurrent use. Locks, in the order they nest:
//
//	evictMu (one per manager: evictions and swap-ins, their streams)
//	  → share.mu (one per allocation with chunks of its own, with its attachments)
//	  → Window.mu (one per window: its address space, mappings, slabs)
//	    → Manager.mu (tenants, windows, pool, physical accounting)
//	    → Manager.scrubMu (the scrub stream; a leaf)
//	  → swapStore.mu (pinned host buffers; a leaf: AllocHost runs outside it)
//
// Only Free, Attach and Close of allocations with their own chunks take a
// share lock; they then take the windows involved one at a time, so two
// windows' locks are never held together. Only the holder of evictMu holds
// several share locks (those of the victims whose evictions are under way,
// from begin to finish, and a swap-in's); no one else waits for a second
// share lock, so that cannot deadlock, and a chunk with an eviction under
// way is no candidate, so the holder never waits for its own. Eviction
// keeps a window quiesced after letting go of its lock (Quiesce's contract
// allows that). Close takes no lock while it calls
// those. Tenant usage and quotas are atomics (a compare-and-swap loop
// enforces the quota across windows), and GuardRange and Window.Touch are
// lock-free, so a launch path reading them never waits for an allocation.
//
// Backend calls that change a window's mappings run under that window's lock,
// and so does the Quiesce callback: they must not interleave with another
// change to the same window. While a remap runs, the window's Resolve and
// sub-allocations wait for it; that session is quiesced anyway. No backend call runs under Manager.mu;
// CreateChunk and chunk Release run under no lock at all, so one session
// creating a chunk does not hold up another's sub-allocations.
package mem
