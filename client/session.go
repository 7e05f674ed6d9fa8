package client

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/wire"
)

// chunk is the most data one copy request carries; larger copies are split.
const chunk = 4 << 20

// Session is a capability to use one device: a direct connection to the driver
// process that owns it. Closing it (or the process exiting) releases everything
// it holds.
type Session struct {
	rpc        *wire.Client
	id         uint64
	tenant     string
	rights     Rights
	windowBase uint64
	windowSize uint64
	quota      uint64
	trust      TrustTier
	closed     atomic.Bool
	hot        *hotSession // rings and staging (hotpath.go)
}

// ID returns the session's id, as ps shows it.
func (s *Session) ID() uint64 { return s.id }

// Tenant returns the tenant the session belongs to.
func (s *Session) Tenant() string { return s.tenant }

// Rights returns the rights the session was opened with or last restricted to.
func (s *Session) Rights() Rights { return Rights(atomic.LoadUint64((*uint64)(&s.rights))) }

// Trust returns the trust tier of the session's tenant: what code it may
// load (guarded PTX only, or also allowlisted machine code).
func (s *Session) Trust() TrustTier { return s.trust }

// Window returns the base and size of the session's device address window:
// every buffer of the session lies inside it.
func (s *Session) Window() (base, size uint64) { return s.windowBase, s.windowSize }

// Close ends the session. Everything it holds is released.
func (s *Session) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.rpc.Close()
}

// Done is closed when the session's connection has ended (Close, or the driver
// process died).
func (s *Session) Done() <-chan struct{} { return s.rpc.Done() }

func (s *Session) call(ctx context.Context, req, reply v1.Message) error {
	return s.rpc.Call(ctx, req, reply)
}

// Synchronize waits for all work the session submitted and returns the first
// error of its asynchronous calls.
func (s *Session) Synchronize(ctx context.Context) error {
	if err := s.synchronize(ctx, 0); err != nil {
		return fmt.Errorf("synchronize: %w", err)
	}
	return nil
}

// Restrict narrows the session's rights to those also in keep and returns what
// remains. Rights never widen: restricting is permanent for the session.
func (s *Session) Restrict(ctx context.Context, keep Rights) (Rights, error) {
	var r v1.RightsReply
	if err := s.call(ctx, &v1.Restrict{Rights: keep}, &r); err != nil {
		return 0, fmt.Errorf("restrict: %w", err)
	}
	atomic.StoreUint64((*uint64)(&s.rights), uint64(r.Rights))
	return r.Rights, nil
}

// MemInfo returns the free and total device memory of the session's tenant:
// its quota, not the device's, when it has one.
func (s *Session) MemInfo(ctx context.Context) (free, total uint64, err error) {
	var r v1.MemInfoReply
	if err := s.call(ctx, &v1.MemInfo{}, &r); err != nil {
		return 0, 0, fmt.Errorf("memory info: %w", err)
	}
	return r.Free, r.Total, nil
}

// Stat returns the session's statistics.
func (s *Session) Stat(ctx context.Context) (SessionStat, error) {
	var r v1.SessionStat
	if err := s.call(ctx, &v1.SessionInfo{}, &r); err != nil {
		return r, fmt.Errorf("session info: %w", err)
	}
	return r, nil
}

// release closes any handle.
func (s *Session) release(h uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return s.call(ctx, &v1.Release{Handle: h}, nil)
}

// revoke revokes any handle and its descendants; the handle stays, answering
// ErrRevoked, until closed.
func (s *Session) revoke(ctx context.Context, h uint64) error {
	return s.call(ctx, &v1.Revoke{Handle: h}, nil)
}

// ---- buffers ------------------------------------------------------------------

// BufferOption modifies CreateBuffer.
type BufferOption uint32

// Shareable gives a buffer memory of its own so that it can be granted to other
// sessions (small buffers otherwise share memory chunks with their neighbours).
const Shareable BufferOption = 1

// Buffer is device memory in the session's window.
type Buffer struct {
	s      *Session
	handle uint64
	addr   uint64
	size   uint64
}

// CreateBuffer allocates size bytes of device memory. Passing the tenant's quota
// is ErrQuotaExceeded.
func (s *Session) CreateBuffer(ctx context.Context, size uint64, opts ...BufferOption) (*Buffer, error) {
	var flags uint32
	for _, o := range opts {
		flags |= uint32(o)
	}
	var r v1.BufferCreated
	if err := s.call(ctx, &v1.CreateBuffer{Size: size, Flags: flags}, &r); err != nil {
		return nil, fmt.Errorf("create buffer: %w", err)
	}
	return &Buffer{s: s, handle: r.Handle, addr: r.Addr, size: r.Size}, nil
}

// DestroyBuffer releases a buffer; it is b.Close.
func (s *Session) DestroyBuffer(b *Buffer) error { return b.Close() }

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() uint64 { return b.size }

// Addr returns the buffer's device address (inside the session's window), which
// kernels use.
func (b *Buffer) Addr() uint64 { return b.addr }

// Handle returns the buffer's raw handle on its session.
func (b *Buffer) Handle() uint64 { return b.handle }

// At returns a reference to offset off in the buffer.
func (b *Buffer) At(off uint64) Ref { return Ref{buf: b, off: off} }

// Close releases the buffer; grants of it are revoked.
func (b *Buffer) Close() error { return b.s.release(b.handle) }

// Revoke revokes the buffer and every grant and mapping made from it.
func (b *Buffer) Revoke(ctx context.Context) error { return b.s.revoke(ctx, b.handle) }

// Write copies data to the buffer at off and waits for it to land.
func (b *Buffer) Write(ctx context.Context, off uint64, data []byte) error {
	if ok, err := b.s.hotCopy(ctx, v1.DirHtoD, b.At(off), data, nil, true); ok {
		if err != nil {
			return fmt.Errorf("write buffer: %w", err)
		}
		return nil
	}
	for len(data) > 0 {
		n := min(len(data), chunk)
		if err := b.s.call(ctx, &v1.BufferWrite{Buffer: b.handle, Offset: off, Data: data[:n]}, nil); err != nil {
			return fmt.Errorf("write buffer: %w", err)
		}
		data, off = data[n:], off+uint64(n)
	}
	return nil
}

// Read fills out from the buffer at off.
func (b *Buffer) Read(ctx context.Context, off uint64, out []byte) error {
	if ok, err := b.s.hotCopy(ctx, v1.DirDtoH, b.At(off), out, nil, true); ok {
		if err != nil {
			return fmt.Errorf("read buffer: %w", err)
		}
		return nil
	}
	for len(out) > 0 {
		n := min(len(out), chunk)
		var r v1.Data
		if err := b.s.call(ctx, &v1.BufferRead{Buffer: b.handle, Offset: off, Length: uint64(n)}, &r); err != nil {
			return fmt.Errorf("read buffer: %w", err)
		}
		if len(r.Data) != n {
			return v1.Errorf(v1.CodeMalformed, "read buffer: got %d bytes, want %d", len(r.Data), n)
		}
		copy(out, r.Data)
		out, off = out[n:], off+uint64(n)
	}
	return nil
}

// Ref names device memory for a copy: an offset in a buffer, or a raw device
// address in the session's window (Addr).
type Ref struct {
	buf *Buffer
	off uint64
}

// Addr refers to a device address inside the session's window.
func Addr(addr uint64) Ref { return Ref{off: addr} }

func (r Ref) wire(add uint64) v1.Ref {
	if r.buf == nil {
		return v1.Ref{Offset: r.off + add}
	}
	return v1.Ref{Buffer: r.buf.handle, Offset: r.off + add}
}

func streamHandle(st *Stream) uint64 {
	if st == nil {
		return 0
	}
	return st.handle
}

// CopyToDevice copies src to dst on a stream (nil: the default stream) and
// returns once the daemon has it; the copy itself completes in stream order.
func (s *Session) CopyToDevice(dst Ref, src []byte, st *Stream) error {
	if ok, err := s.hotCopy(context.Background(), v1.DirHtoD, dst, src, st, false); ok {
		if err != nil {
			return fmt.Errorf("copy to device: %w", err)
		}
		return nil
	}
	for off := 0; off < len(src); off += chunk {
		n := min(len(src)-off, chunk)
		err := s.rpc.Send(&v1.Memcpy{Stream: streamHandle(st), Dir: v1.DirHtoD, Dst: dst.wire(uint64(off)), Size: uint64(n), Data: src[off : off+n]})
		if err != nil {
			return fmt.Errorf("copy to device: %w", err)
		}
	}
	return nil
}

// CopyFromDevice copies from src into dst once the stream's earlier work is
// done, and waits for it.
func (s *Session) CopyFromDevice(ctx context.Context, dst []byte, src Ref, st *Stream) error {
	if ok, err := s.hotCopy(ctx, v1.DirDtoH, src, dst, st, true); ok {
		if err != nil {
			return fmt.Errorf("copy from device: %w", err)
		}
		return nil
	}
	for off := 0; off < len(dst); off += chunk {
		n := min(len(dst)-off, chunk)
		var r v1.Data
		err := s.call(ctx, &v1.Memcpy{Stream: streamHandle(st), Dir: v1.DirDtoH, Src: src.wire(uint64(off)), Size: uint64(n)}, &r)
		if err != nil {
			return fmt.Errorf("copy from device: %w", err)
		}
		if len(r.Data) != n {
			return v1.Errorf(v1.CodeMalformed, "copy from device: got %d bytes, want %d", len(r.Data), n)
		}
		copy(dst[off:], r.Data)
	}
	return nil
}

// CopyDevice copies n bytes between device memory, asynchronously.
func (s *Session) CopyDevice(dst, src Ref, n uint64, st *Stream) error {
	err := s.rpc.Send(&v1.Memcpy{Stream: streamHandle(st), Dir: v1.DirDtoD, Dst: dst.wire(0), Src: src.wire(0), Size: n})
	if err != nil {
		return fmt.Errorf("copy device to device: %w", err)
	}
	return nil
}

// Memset sets count elements of elemSize bytes (1, 2 or 4) at dst to value,
// asynchronously.
func (s *Session) Memset(dst Ref, value uint32, elemSize int, count uint64, st *Stream) error {
	if elemSize != 1 && elemSize != 2 && elemSize != 4 {
		return v1.Errorf(v1.CodeInvalidArgument, "memset element size %d (want 1, 2 or 4)", elemSize)
	}
	err := s.rpc.Send(&v1.Memset{Stream: streamHandle(st), Dst: dst.wire(0), Value: value, ElemSize: uint8(elemSize), Count: count})
	if err != nil {
		return fmt.Errorf("memset: %w", err)
	}
	return nil
}

// ---- grants -------------------------------------------------------------------

// Grant is an offer of a buffer to other sessions of the same device. Whoever
// holds its token can attach the buffer with the grant's rights, until it is
// revoked.
type Grant struct {
	s      *Session
	handle uint64
	token  [16]byte
}

// Grant offers a buffer (created Shareable) to other sessions with the given
// buffer rights (BufferRead, BufferWrite, BufferGrant).
func (s *Session) Grant(ctx context.Context, b *Buffer, rights Rights) (*Grant, error) {
	var r v1.Granted
	if err := s.call(ctx, &v1.Grant{Buffer: b.handle, Rights: rights}, &r); err != nil {
		return nil, fmt.Errorf("grant: %w", err)
	}
	return &Grant{s: s, handle: r.Handle, token: r.Token}, nil
}

// Token returns the secret another session presents to Attach.
func (g *Grant) Token() [16]byte { return g.token }

// Revoke withdraws the grant: the buffer is unmapped from every session that
// attached it.
func (g *Grant) Revoke(ctx context.Context) error { return g.s.revoke(ctx, g.handle) }

// Close revokes the grant and releases its handle.
func (g *Grant) Close() error { return g.s.release(g.handle) }

// Attach maps a granted buffer into this session's window. Its address differs
// from the granter's; its contents are the same memory.
func (s *Session) Attach(ctx context.Context, token [16]byte) (*Buffer, error) {
	var r v1.BufferCreated
	if err := s.call(ctx, &v1.Attach{Token: token}, &r); err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	return &Buffer{s: s, handle: r.Handle, addr: r.Addr, size: r.Size}, nil
}
