// Package ledger keeps resource ledgers: how much of each resource (device
// bytes, buffers, handles, programs, streams, in-flight submissions, queue
// depth, mapped bytes) a session and its tenant hold, against limits.
//
// Ledgers form a tree: a tenant's ledger is the parent of its sessions'
// ledgers. Charge adds to a ledger and every ancestor, all or nothing: if any
// of them would pass its limit, nothing stays charged and the error names the
// resource, the limit and the ledger. Close refunds to the ancestors whatever
// is still charged, so a tenant's ledger returns to where it was before the
// session opened.
//
// # Concurrency and lock order
//
// Counters are atomics updated with compare-and-swap, leaf first, so Charge
// and Refund on the launch path take no lock shared with other sessions. A
// charge that fails at an ancestor rolls back what it added below, so for a
// moment another charge may see the failed amount and be refused too: a
// refusal near a limit is possible, an overrun never is.
//
// Each ledger has a RWMutex, closeMu: Charge and Refund hold its read lock
// while they run, so Close (which takes it to set the closed flag) never
// refunds the ancestors in the middle of a charge. childMu guards the set of
// children. Lock order: a ledger's closeMu before its own childMu (New holds
// the parent's read lock while registering the child, so no child joins a
// closing parent); Close holds no lock while it closes the children, and takes
// the parent's childMu alone. No lock is held while calling another package.
package ledger
