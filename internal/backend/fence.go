package backend

import "sync/atomic"

// Fencer is an optional Stream capability: a completion marker the host can
// poll without a driver call. The driver's synchronizing calls for a
// latency-critical tenant poll one instead of blocking in the driver's
// stream synchronize, whose return under other tenants' load came late
// (bench/RESULTS.md, run 41: issued -> synchronized p99 34 µs alone, 47.5 µs
// under load, with the GPU's part unchanged).
//
// What an implementation must do:
//   - Fence enqueues a marker after the work enqueued on the stream so far
//     and returns at once; it is safe for concurrent use with the stream's
//     other methods.
//   - Fence.Reached reports true once the device has passed the marker: all
//     work enqueued before it completed, and its writes (to device memory
//     and to mapped host memory) are visible to the host. It makes no driver
//     call and does not block.
//   - If earlier work on the stream failed, the marker is never reached: the
//     poller learns of the failure from the stream's Query or Synchronize.
//   - Fences of a stream are reached in the order they were enqueued.
//
// On CUDA, a fence is cuStreamWriteValue32 of a sequence number into a word
// of mapped host memory; in the sim, a marker command.
type Fencer interface {
	Fence() (Fence, error)
}

// Fence is a marker enqueued by Fencer.Fence.
type Fence interface {
	Reached() bool
}

// LatestFencer is an optional Fencer capability: a stream's latest fence,
// for as long as it still marks all the stream's work. A latency-critical
// tenant's serving goroutine enqueues a fence as soon as it has answered a
// launch, off the client's path, and its synchronize then polls that one
// instead of enqueueing another (with the driver call and the GPU's
// processing of the write on the path).
//
// What an implementation must do:
//   - LatestFence returns the fence last enqueued and true only if no work
//     was enqueued on the stream after it, nor while it was enqueued; else
//     false. A call to enqueue that has returned counts, whichever goroutine
//     made it.
type LatestFencer interface {
	LatestFence() (Fence, bool)
}

// MarkerRecorder is an optional Stream capability: an event record that is
// the stream owner's bookkeeping, not work. The scheduler records its
// completion and timing events this way, so that a fence enqueued right
// after a latency-critical tenant's kernel, ahead of the scheduler's end
// event, still marks all of that tenant's work: the synchronize polls the
// fence without waiting for the GPU to write the event's timestamp first
// (bench/RESULTS.md, session 13: a timed event between a kernel and the
// fence delayed the fence by 1.5-2.3 µs alone, 3.4-3.8 µs under load).
//
// What an implementation must do:
//   - RecordMarker records e on the stream exactly as Record does (a
//     synchronize, a query and a later wait on e all cover it).
//   - A marker does not count as work for LatestFence: a fence followed only
//     by markers is still the latest fence.
type MarkerRecorder interface {
	RecordMarker(e Event) error
}

// FenceWordSetter is an optional Fencer capability: the stream's fences
// written into a word the caller chose, in memory from HostMapper, so that
// another process mapping the same pages watches them (the client of a
// latency-critical session waits for its work there, without the driver on
// the path).
//
// What an implementation must do:
//   - SetFenceWord makes the stream's later fences write word, whose device
//     address is dptr; fences enqueued before keep writing their own word.
//     The word's numbering starts from the value it holds.
//   - Fences made afterwards implement WordFence with this word.
type FenceWordSetter interface {
	SetFenceWord(word *atomic.Uint32, dptr DevicePtr) error
}

// WordFence is a Fence that says where it is written: it is reached once
// Word holds Seq or a later number, compared in sequence arithmetic
// (int32(word-seq) >= 0): the numbers wrap.
type WordFence interface {
	Fence
	Word() (word *atomic.Uint32, seq uint32)
}

// HostExecutor is an optional Device capability: its work runs on the
// host's CPUs, in this process (the software GPU interprets kernels on
// goroutines). A poller waiting for such a device's work takes a CPU, and a
// Go scheduler slot, from that very work: it must yield both between looks
// rather than spin (on 2 CPUs a spinning fence poller made a high-class
// synchronize on the sim take 372 µs at the median instead of 12:
// bench/RESULTS.md, session 17). A GPU's work needs no host CPU, so its
// devices do not implement it.
type HostExecutor interface {
	ExecutesOnHost() bool
}

// ExecutesOnHost reports whether dev's work runs on the host's CPUs.
func ExecutesOnHost(dev Device) bool {
	he, ok := dev.(HostExecutor)
	return ok && he.ExecutesOnHost()
}
