// Package sched releases device work to backend streams on behalf of tenants.
//
// Each tenant has a Queue. Submit appends a Command and blocks while the queue is
// at its depth limit, so a flooding client is slowed by backpressure instead of
// growing the daemon's memory. One dispatcher goroutine per Scheduler picks the
// next command under the active policy, issues it on its backend stream, and
// tracks its completion with an event, keeping each tenant's in-flight commands
// under its limit so newly arrived urgent work never waits behind a deep
// hardware queue.
//
// Commands of one Queue are issued in submission order (a fence recorded on one
// stream and waited on by another therefore always exists before the wait).
//
// Lock order: Scheduler.mu, then nothing. Issue and Done callbacks run without
// the lock held.
package sched
