// Package interp is the PTX interpreter of gpuos's software GPU (the "sim"
// backend): it compiles a parsed PTX module (internal/ptx) into a compact
// register-slot IR and executes its kernels on CPU goroutines with the exact
// semantics of the instructions real nvcc output uses.
//
// It owns compilation ([Compile], [Program], [Kernel]) and execution
// ([Kernel.Run]); device memory belongs to the caller, reached through the
// [Memory] interface. A construct the interpreter does not implement is an
// error at load time naming it and its PTX line ([ErrUnsupported],
// v1.CodeUnsupported), never a wrong result at run time; a kernel that goes
// wrong at run time stops with a [*Fault] that matches v1.ErrLaunchFailed.
//
// # Execution model
//
// Blocks are handed out in index order to Launch.Workers goroutines. Inside a
// block, threads are state machines run one after another on the worker's
// goroutine: a thread runs until it exits, reaches a barrier or warp
// collective, or has run 4096 instructions (then the next thread runs, so spin
// loops on other threads progress). A CTA barrier completes when every
// non-exited thread of the block (or the thread count given, counted in whole
// warps) has arrived; a warp collective (shfl, vote, match, redux,
// bar.warp.sync) when every non-exited lane of its membermask waits at a
// collective of the same kind and mask. Exiting threads release barriers they
// were holding up, as PTX's exit specifies. activemask completes when no
// thread of the block can run; it returns the lanes waiting at that same
// instruction (the converged lanes). A block in which threads wait and none can
// run is a [FaultDeadlock]. For correctly synchronised programs this is
// indistinguishable from independent thread scheduling; with Workers = 1 a run
// is fully deterministic.
//
// Memory model: every access is performed in program order and is at once
// visible to all threads, so fences and membars are no-ops and the .volatile,
// .relaxed, .acquire, .release and scope qualifiers and every cache operator
// and eviction hint are accepted and ignored. Atomics on global memory take one
// of 1024 striped mutexes (by 32-byte granule), so they are atomic across
// blocks running in parallel and across concurrent launches; shared-memory
// atomics need no lock (a block runs on one goroutine).
//
// Generic addresses: [SharedWindow] + offset is the executing block's shared
// memory, [LocalWindow] + offset the executing thread's local memory (each
// window [WindowSize] bytes); any other generic address is global. cvta,
// cvta.to, isspacep and generic ld/st/atom/red route by window. Shared-space
// addresses start at 0 (static variables, then the dynamic part aligned to the
// largest extern declaration's alignment, at least 16); local-space addresses
// are offsets in the thread's local stack (kernel frame at 0, callee frames
// above it). The .const space lives in global memory: module-scope .const
// variables are [Global]s with Const set.
//
// Virtual time: %globaltimer reads Launch.StartNs + NsPerInstruction × (the
// thread's executed instructions) + the nanoseconds it slept; %clock64 reads
// instructions + slept nanoseconds (one cycle per nanosecond).
//
// Lock order: [Program] holds a mutex only to publish Bind; a Run holds its
// grid's fault mutex only to record a fault and its printf mutex only around
// one Launch.Printf Write; global atomics hold one stripe mutex for one
// read-modify-write. None is held while another is taken, and [Memory.Slice]
// is never called with any of them held.
//
// # Supported PTX
//
// Module: .version (any), .target sm_XX (and debug, texmode_unified),
// .address_size 64; .entry and .func definitions; module-scope .global and
// .const variables with initializers (literals and generic(sym)+off addresses,
// reported as [Reloc]s), and .shared variables (sized, or extern unsized for
// dynamic shared memory); .file, .loc, .pragma, .section (ignored). Kernel
// directives .maxntid, .reqntid (checked at launch), .minnctapersm, .maxnreg,
// .noreturn, .pragma; cluster directives only with all dimensions 1.
// Declarations in bodies: .reg (any scalar type incl. .pred, families %r<N>),
// .local (arrays, .align), .shared (static and extern), .param in call blocks;
// nested { } scopes (names and labels).
//
// Types: .b8 .b16 .b32 .b64, .u8–.u64, .s8–.s64, .f32, .f64, .pred; .f16,
// .bf16, .f16x2 and .bf16x2 for the half-precision instructions below, memory,
// mov, selp and cvt.
//
// State spaces: .global, .shared (.shared::cta), .local, .param
// (.param::entry, .param::func), .const, and generic addressing.
//
// Integer (u16/u32/u64/s16/s32/s64 unless noted): add, sub (.sat for s32;
// .cc), addc, subc (.cc; 32 and 64 bits), mul.lo/.hi/.wide, mad.lo/.hi/.wide
// (.sat with .hi.s32; .cc), madc.lo/.hi (.cc), mul24.lo/.hi and
// mad24.lo/.hi (u32/s32), sad, div, rem (x/0 gives all ones and x%0 gives x;
// MIN/−1 wraps), abs, neg, min, max (.relu for s32); popc, clz, brev (b32/b64),
// bfind (.shiftamt; u32/u64/s32/s64), bfe (u32/u64/s32/s64), bfi (b32/b64),
// prmt.b32 (default, .f4e, .b4e, .rc8, .ecl, .ecr, .rc16), lop3.b32,
// shf.l/.r.wrap/.clamp.b32, dp4a, dp2a.lo/.hi, bmsk.wrap/.clamp.b32,
// szext.wrap/.clamp (u32/s32); and, or, xor, not (pred/b16/b32/b64), cnot;
// shl (b16/b32/b64), shr (b/u/s 16/32/64); shift amounts ≥ the width clamp.
//
// Compare and select: setp with eq ne lt le gt ge lo ls hi hs (integers; b
// types eq/ne only) and eq ne lt le gt ge equ neu ltu leu gtu geu num nan
// (f32 with .ftz, f64), .and/.or/.xor with a (negated) predicate, p|q
// destinations; set (.u32/.s32/.f32 results) with the same comparisons;
// selp (16- to 64-bit types); slct (.s32 or .f32 selector, .ftz).
//
// Floating point, bit-exact where PTX defines exact rounding: add, sub, mul,
// fma, mad (fused) with .rn/.rz/.rm/.rp, .ftz and .sat (f32) and .rn/.rz/.rm/.rp
// (f64); div.rn/.rz/.rm/.rp (f32 .ftz, f64), div.full.f32 (correctly rounded,
// within its 2 ulp), div.approx.f32 (a·(1/b): correctly rounded for |b| ≤
// 2^126, 0 — NaN for infinite a — above, as specified); rcp.rn/.rz/.rm/.rp
// (f32 .ftz, f64), rcp.approx.f32 (.ftz), rcp.approx.ftz.f64; sqrt.rn/.rz/.rm/.rp
// (f32 .ftz, f64), sqrt.approx.f32 (.ftz); rsqrt.approx.f32 (.ftz),
// rsqrt.approx(.ftz).f64; ex2.approx, lg2.approx, sin.approx, cos.approx
// (.ftz, f32), tanh.approx.f32; min, max (.ftz, .NaN; a NaN operand is
// ignored unless both are NaN; −0 < +0), abs, neg (.ftz), copysign, testp
// (.finite .infinite .number .notanumber .normal .subnormal). Exactly rounded
// results come from the host's IEEE arithmetic in round-to-nearest, adjusted
// for the directed modes by the exact sign of the residual (error-free
// transformations, math/big where those could underflow), including the signs
// of exact zeros. The .approx functions are computed in double precision and
// rounded once: at most 0.5 ulp plus 2^-40 relative from the exact value,
// inside every bound PTX states (rcp/sqrt 1 ulp, rsqrt 2^-22.9, ex2 2 ulp,
// lg2 2^-22, sin/cos 2^-20.5 absolute, tanh 2^-11 relative). Arithmetic NaN
// results are canonical (0x7fffffff, 0x7fffffffffffffff); neg/abs/copysign/mov
// act on bits. Without .ftz, f32 subnormals are kept; with .ftz, subnormal
// inputs and results (after rounding) become zeros of the same sign.
// add/mul without a rounding modifier are not contracted into fma (ptxas
// might contract them on hardware).
//
// Half precision (.f16, .bf16 and packed .f16x2, .bf16x2, element 0 in the
// low half), round-to-nearest as PTX offers: add, sub, mul, fma.rn (fused),
// with .ftz and .sat (f16) and .relu (fma); min, max (.NaN, .relu); neg, abs
// (.ftz); setp on scalar .f16/.bf16 with every float comparison. Results are
// exactly rounded: operands widen exactly and sums are rounded to odd in
// float64 before the one rounding to the narrow format.
//
// Conversions: cvt between every pair of u8–u64, s8–s64, f16, bf16, f32,
// f64: integer to integer (truncation or sign/zero extension, .sat clamps);
// float to integer with .rni/.rzi/.rmi/.rpi (always saturating, NaN → 0,
// .ftz for f32); integer to float with .rn/.rz/.rm/.rp (.sat); float to
// float with .rn/.rz/.rm/.rp when narrowing, .rni/.rzi/.rmi/.rpi to round to
// an integral value, .ftz, .sat, .relu (f16/bf16 results); cvt.f16x2.f32 and
// cvt.bf16x2.f32 (.rn etc., .relu). cvta and cvta.to for .global, .const,
// .shared, .local (u32/u64); isspacep (.global .shared .local .const .param).
//
// Data movement: mov (registers, immediates, special registers, variable
// addresses and generic(var), vector pack/unpack such as mov.b64 %rd,
// {%r1,%r2}); ld, st (.global .shared .local .param .const and generic;
// .v2/.v4; .nc, .ca .cg .cs .lu .cv .wb .wt, .L1::/.L2:: hints and a trailing
// cache-policy operand, .volatile, .weak/.relaxed/.acquire/.release with
// .cta/.gpu/.sys/.cluster scopes; sign extension for .s8/.s16 loads; sink "_"
// elements); ldu.global; prefetch, prefetchu, createpolicy (no effect); ld.param
// of kernel parameters by name or by their address (mov %rd, param).
//
// Asynchronous copies: cp.async.ca/.cg.shared.global with 4, 8 or 16 bytes,
// src-size (zero fill) or ignore-src, cache hints; cp.async.commit_group,
// wait_group, wait_all. The copy is performed when the instruction executes
// (its destination is undefined until the wait, so this is exact).
//
// Atomics: atom and red on .global, .shared and generic addresses: add
// (u32 u64 s32 s64 f32 f64; f32 rounds to nearest and flushes subnormals), inc
// and dec (u32), cas and exch (b32 b64), min and max (u32 s32 u64 s64), and,
// or, xor (b32 b64); semantics and scope qualifiers accepted.
//
// Synchronisation: bar.sync / barrier.sync (.aligned, .cta; barriers 0–15,
// optional thread count), bar.arrive, bar.red.popc.u32 and bar.red.and/.or.pred
// (negated predicate allowed); bar.warp.sync; membar and fence (no effect);
// shfl.sync.up/.down/.bfly/.idx.b32 with clamp/segment operand and optional
// predicate result (a source lane outside the participating lanes yields the
// thread's own value); vote.sync.all/.any/.uni.pred and .ballot.b32 (negated
// predicate allowed); match.any/.all.sync.b32/.b64; redux.sync add
// (u32/s32), min/max (u32/s32), and/or/xor (b32); activemask.b32.
//
// Control: predication @p/@!p on any instruction; bra (.uni); call (.uni)
// of device functions with .param arguments and return values declared in
// call blocks, recursion (up to [MaxCallDepth] frames and
// [MaxLocalPerThread] bytes of local memory); ret; exit; trap and brkpt
// (FaultTrap); nanosleep (advances the thread's clock); pmevent (no effect).
// Two external functions nvcc calls are built in: __assertfail (device
// assert) traps with the assertion's message, file, line and function in the
// fault, and vprintf (device printf) formats its arguments as C does (d i u x
// X o c s p f F e E g G with flags, width, precision and h/l/ll lengths) and
// writes the text to Launch.Printf.
//
// Special registers: %tid, %ntid, %ctaid, %nctaid (.x .y .z), %laneid,
// %warpid (linear thread index / 32), %nwarpid (64), %smid (block index mod
// Launch.SMs), %nsmid, %gridid (0), %lanemask_eq/_le/_lt/_ge/_gt,
// %dynamic_smem_size, %total_smem_size, WARP_SZ, %clock, %clock64,
// %globaltimer, %globaltimer_lo, %globaltimer_hi.
//
// # Unsupported (ErrUnsupported at load)
//
// Textures, surfaces and samplers (tex, tld4, suld, sust, .tex variables);
// matrix and tensor instructions (mma, wmma, wgmma, ldmatrix, stmatrix,
// movmatrix, tcgen05); bulk and tensor copies and memory barriers
// (cp.async.bulk*, cp.reduce.async*, cp.async.mbarrier.arrive, mbarrier,
// tensormap); half-precision transcendentals (ex2, tanh … on .f16/.bf16),
// packed half comparisons (setp/set on .f16x2/.bf16x2), .xorsign.abs, and
// narrow float types (tf32, e4m3, e5m2, e2m1, …); 128-bit and vector atomics
// (atom.*.b128, atom.v2/v4), atom/red with .noftz; multimem; clusters
// (.shared::cluster, mapa, getctarank, cluster barriers and special
// registers, cluster sizes other than 1); indirect calls and jump tables (call
// through a register, .callprototype, brx.idx), function addresses,
// cvta.param and generic addresses of parameters, register-addressed .param
// access in device functions; .reg parameters; alloca, stacksave,
// stackrestore; external functions other than __assertfail and vprintf
// (malloc, free, …); griddepcontrol, elect, setmaxnreg and other sm_90 extras;
// shfl and vote without .sync; 32-bit addressing; .extern variables and
// declarations without definitions (modules are not linked); .attribute
// (.managed); %envreg, %pm and other special registers not listed above.
package interp
