// Package ring is the shared-memory hot path between a client and its driver
// process: byte rings that carry variable-length messages (whole api/v1
// frames) in one direction each, a staging area of fixed-size slots for bulk
// copies, and the memfd mappings both live in.
//
// # Rings
//
// A ring is one control page and a power-of-two data area in shared memory.
// The control page holds the producer's head and the consumer's tail (byte
// counts that only grow, each on its own cache lines) and one futex word per
// direction. A message is written as one or more records: an 8-byte record
// header (u32 length, u32 flags) and the bytes, padded to 8. A record never
// wraps: when one does not fit before the end of the data area, a pad record
// skips to its start. Messages longer than a quarter of the ring are split
// into records flagged "more", which the consumer reassembles up to the
// message limit it was given.
//
// Waiting costs no system call in the steady state: a waiter polls for a
// bounded time (Options.Spin), then sets its futex word and sleeps on it
// (FUTEX_WAIT without the private flag, since the word is shared between
// processes); the other side wakes it only when it finds the word set. Sleeps
// are bounded too (Options.Sleep), so a waiter re-checks its own state even if
// a peer tampers with the word.
//
// Between looks a poller yields its CPU (Options.Yield; by default
// sched_yield), so that a thread woken there runs at once. A yield that kept
// the poller away longer than LongYield means a thread that holds the CPU
// for its whole slice ran instead (a nice or SCHED_IDLE CPU hog, beside
// which a yielding poller gets almost none of its CPU): the process's poll
// loops then spin without yielding for a while (LongYields counts them).
//
// # Trust
//
// The memory is shared with a peer that may be hostile. Each end keeps its own
// position and the ring's size privately and reads the peer's position once
// per check; the consumer reads each record header once, checks its length,
// flags and extent against the published head and its own size before copying
// anything out, and copies every message into private memory before anyone
// looks at it. Anything inconsistent is ErrCorrupt, after which the end is
// unusable: a corrupt ring ends that one session. Shared memory is created by
// the trusted side (the driver) and sealed against shrinking (SIGBUS on a
// truncated mapping would otherwise kill the driver); the other side refuses
// memory that is not sealed so.
//
// Peer death is not detected here: the owner watches its socket and calls
// Close (fail at once) or Shutdown (drain what was published, then fail),
// which wake any waiter.
//
// # Staging
//
// A Staging area is a control page, one completion word per slot and the
// slots. The client copies data into a free slot and names it in a request;
// the driver, once the device copy is done, stores the request's generation in
// the slot's completion word (Complete) and rings the staging bell; the client
// reuses a slot when its word shows the generation it last used.
//
// # Concurrency and lock order
//
// A Producer and a Consumer each serve one goroutine at a time (callers
// serialise); Close, Shutdown and Interrupt may be called from any goroutine
// at any time. Each end has one internal RWMutex, held shared by operations
// and exclusively by Close, which therefore returns only once no operation
// touches the memory: after the ends are closed the mapping may be unmapped.
// Staging methods are safe for concurrent use under the same rule; Wait and
// View call back with that lock held shared, so their callbacks call no
// method of the area, and a caller's own locks come after it. OnFull runs
// with the producer's lock held shared: it must not write to that ring;
// OnEmpty with the consumer's: it must not read that ring.
package ring
