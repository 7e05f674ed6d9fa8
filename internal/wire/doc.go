// Package wire carries api/v1 frames over Unix stream sockets, with file
// descriptors passed alongside, for the client, the manager and the driver
// processes.
//
// It owns three layers, each usable alone:
//
//   - Conn: framing. ReadFrame returns a header, its payload and the
//     descriptors that came with it; WriteMessage and WriteFrame send one frame
//     with optional descriptors (SCM_RIGHTS, in the same sendmsg as the frame's
//     first byte). Reads are buffered but go through recvmsg, so ancillary data
//     is never lost: received descriptors are queued with the stream offsets
//     they arrived at and handed to the frame whose header claims them; strays
//     are closed. The Go netpoller is kept (syscalls go through the socket's
//     RawConn), so deadlines on UnixConn() work. PeerCred, Pair, SocketPair,
//     FromFD and Dial make and inspect connections.
//   - Client: request/reply. It numbers requests, sends them synchronously
//     (Call, CallFDs: wait for the reply with that ID) or asynchronously (Send:
//     FlagNoReply), routes replies from one reader goroutine, and returns Error
//     replies as *v1.Error.
//   - Server: a serve loop that enforces the protocol (Hello first, v1.Admit,
//     strict decoding, Unsupported for unknown types, Malformed-and-close for
//     unframeable input) and hands admitted requests to a Handler one at a time.
//     It serves any Transport: a Conn, or a HotConn.
//   - The hot path: a session's requests can move off the socket onto
//     shared-memory rings (internal/ring). On the driver's side a HotConn
//     starts as the socket; UseRings offers rings, and the client's next
//     request decides: on the submission ring, every later one comes there
//     and replies go on the completion ring; on the socket, the rings are
//     dropped. Replies with descriptors always go on the socket, which also
//     stays the connection's life: its end lets the driver serve what the
//     client had published and then end, and fails the client's calls. A
//     request read off the ring says whether others wait behind it
//     (Request.More), so a handler can treat a burst as one. Request types
//     the handler keeps nothing of (Server.Reuse: launches) are decoded into
//     one message, and their ring frames read into one buffer
//     (HotConn.Recycle), so a burst of them allocates nothing. On
//     the client's side, Client.UseRings moves requests onto the rings (any
//     goroutine sends, under a lock); replies on the completion ring are read
//     by whichever waiting caller holds the reading role, so a lone caller
//     needs no goroutine switch. Start and Call.Wait keep several requests in
//     flight from one goroutine.
//
// Typical use, on the client side:
//
//	c, err := wire.Dial(ctx, socketPath)
//	cl := wire.NewClient(c)
//	defer cl.Close()
//	var hr v1.HelloReply
//	err = cl.Call(ctx, v1.NewHello(v1.RoleClient, token, program), &hr)
//	var so v1.SessionOpened
//	fds, err := cl.CallFDs(ctx, &v1.OpenSession{Device: 0}, &so, nil)
//	session, err := wire.FromFD(fds[0]) // then NewClient(session), Hello, ...
//
// and on the server side:
//
//	srv := &wire.Server{Endpoint: v1.EndpointDriver, Rights: sess.Rights, Handle: sess.Handle, Deferred: sess.Defer}
//	err := srv.Serve(ctx, conn)
//
// Errors: ReadFrame returns io.EOF at a clean end of stream, an error wrapping
// io.ErrUnexpectedEOF and ErrConnLost when the peer stops mid-frame, and
// Malformed errors (ErrFrameTooLarge, ErrBadFDs, or a v1 header error) for
// input that cannot be framed; after those the connection must be closed.
//
// Descriptor ownership: descriptors passed to WriteMessage, WriteFrame, Send
// and CallFDs stay the caller's; descriptors received (Frame.FDs, what CallFDs
// returns, Request.FDs) are the receiver's to close; descriptors a Handler
// returns are closed by Server once sent.
//
// Lock order: a Conn has a read lock and a write lock, never held together
// (Close takes the read lock after closing the socket, so that a blocked read
// returns first). Client.mu is taken alone, never while writing or reading.
// On rings, a client's send lock may be held while it takes the reading role
// (to drain replies when the submission ring is full), never the reverse.
// HotConn.mu is taken alone. Server holds no locks. No callback is called
// with a lock held.
package wire
