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
// A Client and its Sessions are safe for concurrent use.
package client
