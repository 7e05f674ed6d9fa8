// Package slice is the slicing pass of the PTX pipeline (parse → verify →
// guard → slice → load): it lets a kernel's grid run as several launches
// (slices), so that a scheduler can run other work between them — the way a
// long best-effort kernel yields to high-priority work on a GPU that cannot
// preempt it.
//
// Transform adds to a module a twin of each kernel that can be sliced: the
// same code with NumParams extra parameters, the block offset and the full
// grid, reading %ctaid as the launch's block index plus the offset and
// %nctaid as the full grid. A launch of grid G can then be replaced by
// launches of the twin on sub-grids along one dimension (Dim, Plan), each
// seeing exactly the block indices and grid size it would have seen in G, so
// the results are the same. The original kernels are not changed.
//
// A kernel is left whole when slicing could change what it computes or
// hang it: it reads its block index as a vector or through a device function,
// reads %gridid or any cluster register, uses thread-block clusters or
// instructions that need co-scheduled blocks, calls or branches indirectly,
// or has a loop waiting on global memory that other blocks write (the shape
// of a grid-wide barrier), or the module carries debug sections. Result says
// which and why.
//
// The package holds no state and takes no locks.
package slice
