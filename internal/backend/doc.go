// Package backend defines what a gpuos driver process needs from a GPU: one
// context per device, VMM-style memory (reserve address ranges, create physical
// chunks, map them, grant access), page-locked host memory, module loading, and
// streams and events with CUDA's ordering.
//
// Two implementations live below it: cuda (the NVIDIA driver through dlopen, no
// CUDA headers at build time) and sim (a software GPU: host memory, a PTX
// interpreter and a deterministic cost model). Auto-selection between them is in
// Select.
//
// The interface is deliberately VMM-shaped rather than cuMemAlloc-shaped: gpuos
// places every allocation inside a per-session address window, shares physical
// chunks between windows and swaps them to host memory, which needs control of
// mappings, not just allocations.
//
// Optional capabilities, found by type assertion: a Device may be a
// MappedHostAllocator (host memory kernels reach at a device address: the
// guard's fault records) or a Partitioner (SMs kept for latency-critical
// work); a Stream may be a Fencer (a completion marker the host polls
// without a driver call: a latency-critical tenant's synchronize).
package backend
