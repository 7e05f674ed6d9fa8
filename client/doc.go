// Package client is the Go API of gpuos: connect to the daemon, open sessions on
// a device, and use the capabilities a session hands out — buffers, programs,
// kernels, streams and fences.
//
// Every object is a capability: an unforgeable handle valid only on its own
// session. Rights only narrow (Session.Restrict), a buffer can be granted to
// another session (Session.Grant, Session.Attach) and every grant can be revoked.
//
// Asynchronous calls (Launch, the *Async copies, Memset, Stream.WaitFence) return
// as soon as the request is sent; an error the daemon finds in them is reported by
// the session's next synchronizing call (Synchronize, Fence.Wait, a synchronous
// copy), as CUDA reports errors of asynchronous work.
//
// Errors are typed: compare with errors.Is against the Err* values of this
// package, which match the same errors wherever they were raised (in the
// manager, the driver process or here). A session whose driver process dies
// fails with ErrDeviceLost.
//
// # Transports
//
// A session reaches its driver process over shared-memory rings by default
// (TransportRing): requests and replies cross without a system call in the
// steady state, large copies are pipelined through a staging area the driver
// keeps page-locked, and HostBuffer memory (AllocHost) is copied from and to
// directly. Options.Transport or $GPUOS_TRANSPORT=socket sends everything on
// the session's socket instead; a session that cannot get rings uses the
// socket without being asked. HotPath holds the tuning knobs (polling time,
// ring and staging sizes, the pipelining chunk, the inline copy limit), each
// also settable from the environment.
//
// A latency-critical (high-class) session on rings waits for its work on a
// completion page: words the device writes into memory the driver shares
// read-only with this process (Session.ClientCompletion). By default it
// watches its launches (Session.WatchesLaunches): the driver publishes on
// the page how many of each stream's launches are issued with a fence
// behind them, and a synchronize that follows nothing but launches waits on
// the page alone, with no request. With $GPUOS_SYNC_CLIENT=1 a synchronize
// asks the driver where to look instead; with 0 it waits in the driver. A
// violation the guard recorded, an asynchronous error, another request
// since the last synchronize, or work not done within the driver's fence
// poll, sends it to the driver, which waits and reports as before.
//
// A Client and its Sessions are safe for concurrent use.
package client
