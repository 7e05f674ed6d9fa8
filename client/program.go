package client

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Program is a loaded module (PTX, cubin or fatbin).
type Program struct {
	s       *Session
	handle  uint64
	kernels []string
}

// LoadProgram loads a module image. name labels it in the audit log.
func (s *Session) LoadProgram(ctx context.Context, image []byte, name string) (*Program, error) {
	var r v1.ProgramLoaded
	if err := s.call(ctx, &v1.LoadProgram{Image: image, Name: name}, &r); err != nil {
		return nil, fmt.Errorf("load program %s: %w", name, err)
	}
	return &Program{s: s, handle: r.Handle, kernels: r.Kernels}, nil
}

// Kernels lists the kernels the program defines (known for PTX images).
func (p *Program) Kernels() []string { return p.kernels }

// Close unloads the program; its kernels become invalid.
func (p *Program) Close() error { return p.s.release(p.handle) }

// Global returns the device address and size of a module-scope variable.
func (p *Program) Global(ctx context.Context, name string) (addr, size uint64, err error) {
	var r v1.BufferCreated
	if err := p.s.call(ctx, &v1.GetGlobal{Program: p.handle, Name: name}, &r); err != nil {
		return 0, 0, fmt.Errorf("global %s: %w", name, err)
	}
	return r.Addr, r.Size, nil
}

// Kernel is a kernel entry point of a program.
type Kernel struct {
	s      *Session
	handle uint64
	name   string
	info   v1.KernelInfo
	size   uint32 // parameter buffer bytes
}

// Kernel looks up a kernel by name.
func (p *Program) Kernel(ctx context.Context, name string) (*Kernel, error) {
	var r v1.KernelInfo
	if err := p.s.call(ctx, &v1.GetKernel{Program: p.handle, Name: name}, &r); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, err)
	}
	k := &Kernel{s: p.s, handle: r.Handle, name: name, info: r}
	for _, pi := range r.Params {
		k.size = max(k.size, pi.Offset+pi.Size)
	}
	return k, nil
}

// Name returns the kernel's name.
func (k *Kernel) Name() string { return k.name }

// Info returns the kernel's parameter layout and attributes.
func (k *Kernel) Info() v1.KernelInfo { return k.info }

// Close releases the kernel handle.
func (k *Kernel) Close() error { return k.s.release(k.handle) }

// Dim3 is a grid or block shape; zero components count as 1.
type Dim3 struct{ X, Y, Z uint32 }

func (d Dim3) wire() [3]uint32 {
	one := func(v uint32) uint32 { return max(v, 1) }
	return [3]uint32{one(d.X), one(d.Y), one(d.Z)}
}

// LaunchConfig is a launch's shape and stream.
type LaunchConfig struct {
	Grid, Block Dim3
	SharedMem   uint32  // dynamic shared memory in bytes
	Stream      *Stream // nil: the session's default stream
}

// Pack lays out arguments in the kernel's parameter buffer. Each argument must
// match its parameter's size: *Buffer (its address) and uint64, int64, float64
// take 8 bytes; uint32, int32, float32 take 4; uint16, int16 2; uint8, int8,
// bool 1; int takes 4 or 8 as the parameter needs (and must fit); []byte must
// be exactly the parameter's size (structures passed by value).
func (k *Kernel) Pack(args ...any) ([]byte, error) {
	params := k.info.Params
	if len(args) != len(params) {
		return nil, v1.Errorf(v1.CodeInvalidArgument, "kernel %s takes %d arguments, got %d", k.name, len(params), len(args))
	}
	buf := make([]byte, k.size)
	for i, a := range args {
		p := params[i]
		dst := buf[p.Offset : p.Offset+p.Size]
		if err := packArg(dst, a); err != nil {
			return nil, v1.Errorf(v1.CodeInvalidArgument, "kernel %s argument %d: %v", k.name, i, err)
		}
	}
	return buf, nil
}

func packArg(dst []byte, a any) error {
	le := binary.LittleEndian
	want := func(n int, put func()) error {
		if len(dst) != n {
			return fmt.Errorf("a %T is %d bytes, the parameter %d", a, n, len(dst))
		}
		put()
		return nil
	}
	switch v := a.(type) {
	case *Buffer:
		return want(8, func() { le.PutUint64(dst, v.addr) })
	case uint64:
		return want(8, func() { le.PutUint64(dst, v) })
	case int64:
		return want(8, func() { le.PutUint64(dst, uint64(v)) })
	case float64:
		return want(8, func() { le.PutUint64(dst, math.Float64bits(v)) })
	case uint32:
		return want(4, func() { le.PutUint32(dst, v) })
	case int32:
		return want(4, func() { le.PutUint32(dst, uint32(v)) })
	case float32:
		return want(4, func() { le.PutUint32(dst, math.Float32bits(v)) })
	case uint16:
		return want(2, func() { le.PutUint16(dst, v) })
	case int16:
		return want(2, func() { le.PutUint16(dst, uint16(v)) })
	case uint8:
		return want(1, func() { dst[0] = v })
	case int8:
		return want(1, func() { dst[0] = uint8(v) })
	case bool:
		return want(1, func() {
			if v {
				dst[0] = 1
			}
		})
	case int:
		switch len(dst) {
		case 8:
			le.PutUint64(dst, uint64(v))
			return nil
		case 4:
			if v < math.MinInt32 || v > math.MaxUint32 {
				return fmt.Errorf("int %d does not fit the 4-byte parameter", v)
			}
			le.PutUint32(dst, uint32(v))
			return nil
		}
		return fmt.Errorf("an int cannot fill a %d-byte parameter", len(dst))
	case []byte:
		return want(len(v), func() { copy(dst, v) })
	}
	return fmt.Errorf("unsupported argument type %T", a)
}

// Launch runs a kernel asynchronously with the given arguments (see Pack).
// Errors of the launch itself surface at the next synchronizing call.
func (s *Session) Launch(k *Kernel, cfg LaunchConfig, args ...any) error {
	params, err := k.Pack(args...)
	if err != nil {
		return err
	}
	return s.LaunchRaw(k, cfg, params)
}

// launchMsgs holds Launch requests for reuse: Send encodes one before it
// returns, and a burst of launches then allocates nothing.
var launchMsgs = sync.Pool{New: func() any { return new(v1.Launch) }}

// LaunchRaw runs a kernel with a ready parameter buffer.
func (s *Session) LaunchRaw(k *Kernel, cfg LaunchConfig, params []byte) error {
	m := launchMsgs.Get().(*v1.Launch)
	*m = v1.Launch{Kernel: k.handle, Stream: streamHandle(cfg.Stream), Grid: cfg.Grid.wire(),
		Block: cfg.Block.wire(), SharedMem: cfg.SharedMem, Params: params}
	err := s.rpc.Send(m)
	*m = v1.Launch{} // keep no reference to the caller's parameters
	launchMsgs.Put(m)
	if err != nil {
		return fmt.Errorf("launch %s: %w", k.name, err)
	}
	return nil
}

// ---- streams and fences --------------------------------------------------------

// Stream is an ordered queue of device work.
type Stream struct {
	s      *Session
	handle uint64
}

// CreateStream creates a stream. Priority follows CUDA: lower is more urgent;
// values out of the device's range are clamped.
func (s *Session) CreateStream(ctx context.Context, priority int) (*Stream, error) {
	var r v1.StreamCreated
	if err := s.call(ctx, &v1.CreateStream{Priority: int32(priority)}, &r); err != nil {
		return nil, fmt.Errorf("create stream: %w", err)
	}
	return &Stream{s: s, handle: r.Handle}, nil
}

// Close waits for the stream's work and destroys it.
func (st *Stream) Close() error { return st.s.release(st.handle) }

// Synchronize waits for the stream's work (and everything the session submitted
// before this call).
func (st *Stream) Synchronize(ctx context.Context) error {
	if err := st.s.synchronize(ctx, st.handle); err != nil {
		return fmt.Errorf("synchronize stream: %w", err)
	}
	return nil
}

// WaitFence makes work submitted to the stream from now on wait for the fence.
func (st *Stream) WaitFence(f *Fence) error {
	if err := st.s.rpc.Send(&v1.StreamWaitFence{Stream: st.handle, Fence: f.handle}); err != nil {
		return fmt.Errorf("stream wait: %w", err)
	}
	return nil
}

// Fence marks a point in a stream: it is reached when the work submitted to the
// stream before it has completed.
type Fence struct {
	s      *Session
	handle uint64
}

// Record records a fence on a stream (nil: the default stream).
func (s *Session) Record(ctx context.Context, st *Stream) (*Fence, error) {
	var r v1.FenceCreated
	if err := s.call(ctx, &v1.RecordFence{Stream: streamHandle(st)}, &r); err != nil {
		return nil, fmt.Errorf("record fence: %w", err)
	}
	return &Fence{s: s, handle: r.Handle}, nil
}

// Poll reports whether the fence has been reached.
func (f *Fence) Poll(ctx context.Context) (bool, error) {
	err := f.s.call(ctx, &v1.PollFence{Fence: f.handle}, nil)
	switch v1.CodeOf(err) {
	case v1.CodeOK:
		return true, nil
	case v1.CodeNotReady:
		return false, nil
	}
	return false, fmt.Errorf("poll fence: %w", err)
}

// Wait waits until the fence is reached, for at most timeout (0: no limit):
// ErrTimeout if it is not.
func (f *Fence) Wait(ctx context.Context, timeout time.Duration) error {
	if err := f.s.call(ctx, &v1.WaitFence{Fence: f.handle, TimeoutNs: uint64(max(timeout, 0))}, nil); err != nil {
		return fmt.Errorf("wait fence: %w", err)
	}
	return nil
}

// Close releases the fence.
func (f *Fence) Close() error { return f.s.release(f.handle) }

// Elapsed returns the device time between two reached fences of the session.
func Elapsed(ctx context.Context, start, end *Fence) (time.Duration, error) {
	var r v1.Duration
	if err := start.s.call(ctx, &v1.FenceElapsed{Start: start.handle, End: end.handle}, &r); err != nil {
		return 0, fmt.Errorf("elapsed: %w", err)
	}
	return time.Duration(r.Ns), nil
}
