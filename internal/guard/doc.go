// Package guard is gpuos's PTX memory guard: a pass over a parsed module
// (internal/ptx) that rewrites it so that no load, store, atomic or copy of
// its code can reach memory outside the session's window, and no access can
// fault the shared context. A violation is suppressed and recorded; the
// driver revokes the session that made it. Every other tenant in the same
// CUDA context continues.
//
// # What is checked, and against what
//
// The driver writes Params into a module-scope constant the pass adds
// (ParamsVar, "__gpuos_guard"): the window's base lo and span (the guard
// range of mem.Window: every granule backed, base aligned to the span, a
// power of two), the device address of the program's fault Record, the base
// of its relocated globals, and the device's reserved shared memory. Guarded
// code loads what it needs once per call of each function into registers.
// Until the driver writes them the initial values let no address pass.
//
//   - .global, and generic addresses: (addr & (~(span-1) | (width-1))) == lo,
//     one and plus one compare per access: inside the window and aligned to
//     the access width, which covers the whole width (up to 32 bytes for
//     .v8.b32, 16 for b128 CAS, 128 for discard and applypriority). Generic
//     addresses of shared, local, constant and parameter space are accepted
//     only if the module makes such addresses (cvta to generic): then they
//     must lie inside the block's shared memory, the function's local
//     variables, the module's constants or the kernel's parameters. A generic
//     address of a space the module never converts fails the window check.
//   - .shared (and .shared::cluster, which is checked against the own block):
//     [0, %total_smem_size + reserved), or, where the module declares
//     dynamic shared memory (an unsized .extern .shared array), up to that
//     array's exact end (its address + %dynamic_smem_size) when that is
//     lower: the hardware rounds %total_smem_size up; the address rotated right by
//     log2(width) must be below that bound shifted by the same amount (one
//     funnel shift and one compare: the rotation moves misaligned low bits to
//     the top).
//   - .local: the function's own .local variables ([lowest address, highest
//     end), addresses taken with mov). A device function may access only its
//     own local variables: a pointer into a caller's local array passed to a
//     non-inlined function is a violation (nvcc inlines such code at -O3; the
//     real-world corpus shows whether it happens). This is the only bound that
//     is safe whatever the hardware's stack layout: out-of-range local
//     addresses fault, and the per-thread local size is not visible in PTX.
//   - .const through a register: inside the module's .const variables.
//   - named variables at constant offsets ([s+8]) are proven at load time
//     and cost nothing; named parameters ([p+8]) must be inside the parameter.
//   - .param through a register (a kernel reading its parameters at a
//     computed index: mov.u64 %rd, p; ld.param [%rd+off]): inside the
//     kernel's parameters, [lowest parameter address, highest end), computed
//     from the parameters' addresses (constants to ptxas), and aligned. A
//     register that provably holds one parameter's address plus a constant
//     (single dominating mov/add-immediate definitions) is rewritten to the
//     named access, proven at load time when inside the parameter.
//   - bulk copies (cp.async.bulk, cp.reduce.async.bulk, and the L2 prefetch):
//     source and destination, [addr, addr+size), size a nonzero multiple of
//     16, addr 16-aligned; their mbarrier operand like any shared access.
//     cp.async (non-bulk): the global source and the shared destination.
//   - mbarrier.*, ldmatrix, stmatrix: shared operands.
//   - prefetch, prefetchu, applypriority and the bulk prefetch are hints:
//     outside the window they are suppressed and not recorded (real code
//     prefetches past its arrays' ends).
//
// Cost: the bounds are hoisted into registers; every check is a few ALU
// instructions and the access is predicated on it (no branch), except a
// global load, which is not predicated but reads at an address chosen by the
// check: its own, or inside the guard's sink (SinkVar, a zeroed .global
// variable of the module that nothing writes) when the check fails. ptxas
// turns predicated loads inside conditional blocks into branches and, with
// seven predicate registers, issues them one at a time; chosen addresses
// keep the plain kernel's if-conversion and batching. The same
// address checked twice in a straight-line block is checked once; and a
// register defined once, at a point that dominates all the accesses based on
// it (the usual shape of addresses computed before a loop), is checked for
// each offset it is used at right after its definition, so the accesses in
// the loop are only predicated (see analyze.go). The guard's own instructions
// are the ones internal/interp executes, so the sim runs guarded code (the
// fuzz target checks that whatever the interpreter compiles, it compiles
// guarded).
//
// # On a violation
//
// The access is suppressed: stores, atomics and copies do nothing; global
// loads read the sink's zeros instead; other loads and
// atomics inside loops produce 0 (unless Options.KeepSuppressedLoads; the
// zeroing move is unpredicated where it can be, which keeps ptxas from
// holding each unrolled load's value apart), elsewhere they keep their
// destination's old value (the values are the thread's own, never another
// tenant's, and the session is revoked before it can read anything back).
// The thread notes the violation in two
// registers (a flag and its last offending address); at each return or exit
// of the function it adds one to the Record's count and, if it is the first
// recorder, stores its function's id and the address. trap and brkpt are
// stripped: the thread records a KindTrap event (the address field holds the
// PTX line) and exits; a call to __assertfail likewise (KindAssert). A call
// to vprintf is dropped (its output would go to the driver's own stdout) and
// returns 0. Indirect calls are checked against the module's address-taken
// functions (or the call's .calltargets list) and brx.idx against its
// .branchtargets list (KindCall).
//
// # Fault-record protocol (with internal/driver)
//
// One Record (RecordSize bytes) per guarded program, in host memory the device
// writes (backend.MappedHostAllocator; device memory read by a synchronous
// copy where a backend lacks it). Device writes are atomics (count, function
// id by CAS, kinds by OR) plus one store of the address by the CAS winner. The
// driver reads the record after each of the program's launches completes and
// at every synchronizing call; a nonzero record revokes the session:
// GuardViolation at that call and at every later request, an audit record
// (kind violation, with the function, address and count), and
// SessionStat.Violations.
//
// # Module-scope .global variables
//
// They are relocated into the session's window: the pass removes their
// declarations and returns a Layout; the driver allocates it in the window
// (charged to the tenant's quota), writes the initial contents and
// relocations, and answers cuModuleGetGlobal with the relocated address.
// References to them become the base from Params plus an offset.
// Initializers that take functions' addresses (virtual functions) are refused.
//
// # Refused, with a *FormError (v1 Unsupported) naming the instruction and line
//
// 32-bit or missing .address_size; multimem.*; tensormap.* and tensor-map
// copies (cp.async.bulk.tensor, cp.reduce.async.bulk.tensor: the map is
// opaque and could address anything); texture and surface instructions;
// wgmma.mma_async and tcgen05 (shared memory through descriptors); mapa,
// st.async and red.async (other blocks' shared memory); alloca, stacksave and
// stackrestore; wmma.load and wmma.store; calls to functions the module only
// declares (device malloc, the device runtime; except vprintf and
// __assertfail); indirect calls when the module takes no function's address;
// brx.idx without a .branchtargets list; parameter stores through a
// register, parameter loads through a register in device functions, and
// named parameter accesses past the parameter; 32-bit registers as global addresses;
// external, managed or texture-reference .global variables; module-scope
// .local variables; names starting with __gpuos; and any instruction with a
// memory or bracketed operand the pass does not know, so a new memory
// instruction is never let through unchecked.
//
// The package holds no global state and takes no locks; Guard mutates the
// module it is given and must not run concurrently on the same module.
package guard
