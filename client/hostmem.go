package client

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
)

// HostBuffer is page-locked host memory shared with the session's driver:
// the counterpart of cuMemHostAlloc. A copy between device memory and a slice
// of its Bytes (CopyToDevice, CopyFromDevice, Buffer.Write, Buffer.Read) is a
// direct device copy, with no staging and no copy in this process.
//
// As with CUDA's asynchronous copies from page-locked memory, CopyToDevice
// from a HostBuffer returns at once and the device reads the memory when the
// copy runs: leave it unchanged until the stream has passed the copy
// (Synchronize, a fence).
type HostBuffer struct {
	s      *Session
	handle uint64
	shm    *ring.Shm
	mem    []byte // the bytes asked for
	start  uintptr

	mu     sync.Mutex
	closed bool
}

// AllocHost maps size bytes of page-locked host memory shared with the
// driver. It fails with ErrUnsupported on the socket transport, and with
// ErrQuotaExceeded past what the driver lets one session map.
func (s *Session) AllocHost(ctx context.Context, size int) (*HostBuffer, error) {
	if size <= 0 {
		return nil, v1.Errorf(v1.CodeInvalidArgument, "alloc host: %d bytes", size)
	}
	if s.hot == nil || !s.hot.rings {
		return nil, v1.Errorf(v1.CodeUnsupported, "alloc host: shared host memory needs the ring transport")
	}
	var r v1.HostMapped
	fds, err := s.rpc.CallFDs(ctx, &v1.MapHost{Bytes: uint64(size)}, &r, nil)
	if err != nil {
		return nil, fmt.Errorf("alloc host: %w", err)
	}
	if len(fds) != 1 || r.Bytes < uint64(size) || r.Bytes > 1<<40 {
		for _, fd := range fds {
			closeFD(fd)
		}
		s.unmapHost(r.Handle)
		return nil, v1.Errorf(v1.CodeMalformed, "alloc host: %d bytes with %d descriptors for %d asked", r.Bytes, len(fds), size)
	}
	shm, err := ring.Open(fds[0], int(r.Bytes), false)
	if err != nil {
		s.unmapHost(r.Handle)
		return nil, fmt.Errorf("alloc host: %w", err)
	}
	mem := shm.Bytes()[:size:size]
	h := &HostBuffer{s: s, handle: r.Handle, shm: shm, mem: mem, start: addrOf(mem)}
	s.hot.mu.Lock()
	s.hot.hosts = append(s.hot.hosts, h)
	s.hot.mu.Unlock()
	return h, nil
}

// Bytes returns the memory. It is valid until Close.
func (h *HostBuffer) Bytes() []byte { return h.mem }

// Close waits for the session's work queued so far, releases the memory on
// the driver's side and unmaps it here: Bytes must not be used after.
func (h *HostBuffer) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	s := h.s
	s.hot.mu.Lock()
	for i, x := range s.hot.hosts {
		if x == h {
			s.hot.hosts = append(s.hot.hosts[:i], s.hot.hosts[i+1:]...)
			break
		}
	}
	s.hot.mu.Unlock()
	err := s.unmapHost(h.handle)
	h.shm.Close()
	if err != nil && s.rpc.Err() == nil {
		return fmt.Errorf("free host: %w", err)
	}
	return nil
}

func (s *Session) unmapHost(handle uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return s.call(ctx, &v1.UnmapHost{Handle: handle}, nil)
}

// addrOf is the address of b's first byte, used only to compare ranges (it is
// never turned back into a pointer).
func addrOf(b []byte) uintptr { return reflect.ValueOf(b).Pointer() }

// hostOf finds the HostBuffer that holds all of b, and b's offset in it.
func (s *Session) hostOf(b []byte) (*HostBuffer, uint64, bool) {
	if s.hot == nil || len(b) == 0 {
		return nil, 0, false
	}
	p := addrOf(b)
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	for _, h := range s.hot.hosts {
		if p >= h.start && p-h.start <= uintptr(len(h.mem)) && uintptr(len(b)) <= uintptr(len(h.mem))-(p-h.start) {
			return h, uint64(p - h.start), true
		}
	}
	return nil, 0, false
}

// hotCopy moves a copy onto the hot path if it can: a HostBuffer's memory is
// copied directly, a large copy goes through the staging area. It reports
// whether it took the copy. For HtoD, wait makes it wait for the copy (and
// return the session's deferred error), as a synchronous copy does; DtoH
// always waits.
func (s *Session) hotCopy(ctx context.Context, dir v1.Dir, dev Ref, host []byte, st *Stream, wait bool) (bool, error) {
	if h, off, ok := s.hostOf(host); ok {
		m := &v1.HostCopy{Stream: streamHandle(st), Dir: dir, Dev: dev.wire(0), Host: h.handle, Offset: off, Size: uint64(len(host))}
		if dir == v1.DirHtoD && !wait {
			return true, s.rpc.Send(m)
		}
		return true, s.call(ctx, m, nil)
	}
	if g := s.staging(ctx, len(host)); g != nil {
		return true, s.stagedCopy(ctx, g, dir, dev, host, st, wait)
	}
	return false, nil
}
