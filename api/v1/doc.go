// Package v1 is version 1 of the gpuos wire protocol: the messages that clients,
// the manager and driver processes exchange, their encoding, the one table that
// says which request goes where and needs what, and the typed errors that travel
// in replies. It is public and stable: a Type's number and a message's layout
// never change within major version 1; minor versions only add.
//
// # Frames
//
// Every frame is a 16-byte Header (u32 payload length, u16 Type, u16 Flags,
// u64 request ID; little-endian) and a payload of at most MaxPayload bytes.
// Flags say whether the frame is a Reply, an asynchronous request (NoReply,
// whose error is deferred to the session's next synchronizing call), an Error
// reply, and how many file descriptors (0..MaxFDs) came with it through
// SCM_RIGHTS. Package internal/wire moves frames over Unix sockets.
//
// # Messages and the table
//
// Each message is a Go struct implementing Message; encoding is hand-written
// (no reflection) and Launch and Memcpy encode without allocating into a
// reused Encoder. The message table (Lookup, Types) is the single source of
// truth: for each Type its name, a constructor, its reply type, the endpoints
// that accept it, the session right it needs, whether it may be sent with
// NoReply, and how many file descriptors its frames carry. Admit and
// AdmitMessage enforce it for servers; CheckHeader for receivers of replies;
// Encoder.PutFrame and DecodeFrame for everyone else. Package v1test has one
// filled-in sample of every message, for tests.
//
// # Decoding
//
// Decoding is strict and never panics: truncation, trailing bytes, a bool that
// is not 0 or 1, unknown flag or rights bits (ShmGet.Flags included), a count
// whose elements cannot fit in what is left, an invalid enum (Dir, Role,
// Memset.ElemSize, ShmCtl.Op) or a wrong Hello magic is Malformed
// (errors.Is(err, ErrMalformed)). A decoder never allocates more than the
// frame holds. Decoded byte slices alias the payload.
//
// # Where this package fills gaps in the specification
//
// The specification (WIRE.md) left these open; the choices here are binding:
//
//   - Reply types are numbered from 128: Empty 128, Error 129, then HelloReply,
//     Devices, SessionOpened, Sessions, AuditLines, BufferCreated, Data,
//     ProgramLoaded, KernelInfo, StreamCreated, FenceCreated, RightsReply,
//     Granted, MemInfoReply, Duration, SessionStat, SessionAttached,
//     ShmSegment, ShmStat, RingOpened, StagingOpened, Policies, Tenants,
//     PolicyLoaded, PolicyMapValues (130..154), HostMapped (155).
//     A reply frame's type names its payload. An error reply has type Error and
//     flags Reply|Error; its ID is the request's.
//   - Flags must be consistent: Reply with NoReply, or Error without Reply, is
//     malformed; a reply type must come in a reply frame and a request type in a
//     request frame; Error flag if and only if type Error.
//   - Scheduling requests (PolicyList, PolicyUse, SetShare, TenantStats,
//     6..9) and policy engine requests (PolicyLoad, PolicyUnload,
//     PolicyMaps, 10..12) are accepted by the manager and, passed on by it,
//     by drivers on the control endpoint. MapInfo.Kind outside 1..3 is
//     Malformed. SetShare.Fields names the fields that apply;
//     unknown bits are Malformed, out-of-range values InvalidArgument (the
//     driver's check).
//   - The number of file descriptors a frame carries is fixed per type (the
//     table's FDs): one for SessionOpened, AttachSession, RingOpened,
//     StagingOpened and HostMapped, none elsewhere.
//   - The buffer rights are named RightBufferRead, RightBufferWrite and
//     RightBufferGrant, since BufferRead and BufferWrite are messages.
//   - Attach needs RightGrant (the rights section says Grant covers grant and
//     attach; the table line for Attach named no right).
//   - Rights fields must hold only known bits: session rights in OpenSession,
//     SessionOpened, SessionStat, Restrict, RightsReply and AttachSession;
//     buffer rights in Grant, ShmSegment, ShmCtl and ShmStat.
//   - Shared memory segments (ShmGet, ShmAttach, ShmCtl: the shm-like API)
//     need RightGrant, like Grant and Attach; creating one also needs
//     RightAlloc, which the driver checks.
//   - The hot path (OpenRing, OpenStaging, StagedCopy; see hotpath.go): OpenRing
//     needs no right, since it changes how requests travel and not what they
//     may do; OpenStaging and StagedCopy need RightCopy. StagedCopy is
//     synchronous in the table (an error reply is how the client learns that
//     a slot was not used) but its reply comes before the copy is done unless
//     it asks to Wait. Its Dir must be HtoD or DtoH (else Malformed); its
//     range is the driver's to check. MapHost (RightCopy) shares page-locked
//     host memory; HostCopy (RightCopy, may be NoReply) copies from or to it
//     directly, HtoD or DtoH; UnmapHost needs no right, like Release.
//   - Memcpy: Data must be exactly Size bytes for HtoD and empty otherwise.
//     NoReply is refused for DtoH (its reply carries the bytes), by
//     AdmitMessage after decoding.
//   - NoReply on a request the table does not mark Async is Malformed; for an
//     asynchronous request the server defers that error like any other.
//   - Manager and control requests need no session right; a server on those
//     endpoints passes AllSessionRights to Admit.
//   - An Error with code 0 is malformed; a code this version does not know is
//     kept, since later minor versions may add codes.
//   - Hello's Magic is checked when decoding (wrong magic: Malformed); a major
//     version mismatch is for the server to answer (Hello.Compatible gives the
//     VersionMismatch error).
//   - CreateBuffer.Flags, CreateStream.Flags and Memset.Value are carried
//     as-is; the driver validates them (InvalidArgument), not the codec.
//
// # Concurrency
//
// Messages, Encoders and Decoders are not safe for concurrent use; the table is
// read-only. This package holds no locks.
package v1
