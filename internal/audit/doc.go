// Package audit writes and reads gpuos's audit log: one JSON object per line,
// one line per security-relevant event (sessions opened and closed, programs
// loaded, launches, copies, allocations, grants, revocations, denials, guard
// violations, driver and policy lifecycle).
//
// A Logger never blocks its caller: events go into a bounded queue that one
// goroutine drains, encoding each event and writing its line with a single
// Write call. Opened with Open, the file is in O_APPEND mode, so the manager
// and its driver processes can share one file and lines never interleave.
// When the queue is full an event is dropped and counted; the writer then
// logs an "audit.dropped" record with the count, so a gap is never silent.
// Defer queues an event without waking the writer (it is written with the
// next one, or within Options.DeferFor): for events logged on a
// latency-critical path, where each wake-up of the writer costs the caller.
//
// A Reader reads a log back, line by line, for `gpuos audit` and the
// manager's AuditQuery; Query filters it by time, tenant and kind.
//
// # Concurrency and lock order
//
// Logger.mu (a RWMutex) guards the queue's closing: Log, Defer, Flush and the
// deferral timer hold it for reading while they enqueue, Close for writing
// while it closes the queue. Logger.deferMu guards the deferred events and
// comes after mu; the writer goroutine takes only deferMu, to take the
// deferred events. A Reader is not safe for concurrent use.
package audit
