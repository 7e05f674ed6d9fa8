// Package membench holds the workloads of the memory manager's tests and
// benchmarks: tenants that make checked passes over their data (swapping),
// a two-stage pipeline that hands data between tenants (sharing), and the
// kernels they run (memtest.ptx). The CI tests (client) run them on the
// software GPU; cmd/ holds the GPU benchmarks that run them on a real one.
package membench

import (
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/gpuos/gpuos/client"
)

// PTX is memtest.ptx: fill, pass_check, check and sweep (see the file).
//
//go:embed memtest.ptx
var PTX []byte

// Kernels are the test kernels loaded in one session.
type Kernels struct {
	Prog                          *client.Program
	Fill, PassCheck, Check, Sweep *client.Kernel
}

// Load loads the test kernels into s.
func Load(ctx context.Context, s *client.Session) (*Kernels, error) {
	p, err := s.LoadProgram(ctx, PTX, "memtest.ptx")
	if err != nil {
		return nil, err
	}
	k := &Kernels{Prog: p}
	for name, dst := range map[string]**client.Kernel{"fill": &k.Fill, "pass_check": &k.PassCheck, "check": &k.Check, "sweep": &k.Sweep} {
		if *dst, err = p.Kernel(ctx, name); err != nil {
			p.Close()
			return nil, err
		}
	}
	return k, nil
}

// Grid is the launch shape of the grid-stride kernels.
var Grid = client.LaunchConfig{Grid: client.Dim3{X: 128}, Block: client.Dim3{X: 256}}

// PassesConfig is a tenant's data and passes.
type PassesConfig struct {
	Bytes  uint64 // data in all, a multiple of 4
	Buffer uint64 // bytes per buffer (the last may be smaller); 0: one buffer
	Passes int
	Seed   uint32
	// Verify is how many bytes at each end of every buffer are read back and
	// checked on the host at the end (0: 4 KiB).
	Verify uint64
	// Launch is the launch shape (zero: Grid).
	Launch client.LaunchConfig
	// AfterPass, if set, is called after each pass (0, 1, ...) has completed.
	AfterPass func(pass int)
}

// PassesResult is what a tenant's passes did.
type PassesResult struct {
	Buffers  int
	Errors   uint32        // elements a pass found wrong, all passes together
	Elapsed  time.Duration // fill, passes and verification
	Passes   []time.Duration
	Verified uint64 // bytes checked on the host
}

// bufferBase is the value element 0 of buffer b holds after filling.
func bufferBase(seed uint32, b int) uint32 { return seed + uint32(b)<<22 }

// Passes allocates cfg.Bytes in buffers, fills them (data[i] = base + i),
// makes cfg.Passes passes with pass_check (each checks every element against
// what the previous pass left and adds one), then checks the error count and
// reads both ends of every buffer back. Every pass ends with a
// synchronization, so tenants sharing an oversubscribed device interleave
// there. It frees what it allocated.
func Passes(ctx context.Context, s *client.Session, k *Kernels, cfg PassesConfig) (PassesResult, error) {
	var res PassesResult
	start := time.Now()
	if cfg.Bytes == 0 || cfg.Bytes%4 != 0 {
		return res, fmt.Errorf("passes: %d bytes is not a positive multiple of 4", cfg.Bytes)
	}
	if cfg.Buffer == 0 || cfg.Buffer > cfg.Bytes {
		cfg.Buffer = cfg.Bytes
	}
	cfg.Buffer = cfg.Buffer &^ 3
	if cfg.Verify == 0 {
		cfg.Verify = 4 << 10
	}
	lc := cfg.Launch
	if lc.Grid.X == 0 {
		lc = Grid
	}
	var bufs []*client.Buffer
	defer func() {
		for _, b := range bufs {
			b.Close()
		}
	}()
	for left := cfg.Bytes; left > 0; {
		n := min(left, cfg.Buffer)
		b, err := s.CreateBuffer(ctx, n)
		if err != nil {
			return res, fmt.Errorf("passes: buffer %d of %d bytes: %w", len(bufs), n, err)
		}
		bufs = append(bufs, b)
		left -= n
	}
	res.Buffers = len(bufs)
	errs, err := s.CreateBuffer(ctx, 4)
	if err != nil {
		return res, fmt.Errorf("passes: error counter: %w", err)
	}
	bufs = append(bufs, errs) // freed with the rest
	data := bufs[:len(bufs)-1]
	if err := s.Memset(errs.At(0), 0, 4, 1, nil); err != nil {
		return res, err
	}
	for i, b := range data {
		if err := s.Launch(k.Fill, lc, b, b.Size()/4, bufferBase(cfg.Seed, i)); err != nil {
			return res, err
		}
	}
	if err := s.Synchronize(ctx); err != nil {
		return res, fmt.Errorf("passes: fill: %w", err)
	}
	for p := 0; p < cfg.Passes; p++ {
		t := time.Now()
		for i, b := range data {
			if err := s.Launch(k.PassCheck, lc, b, b.Size()/4, bufferBase(cfg.Seed, i)+uint32(p), errs); err != nil {
				return res, err
			}
		}
		if err := s.Synchronize(ctx); err != nil {
			return res, fmt.Errorf("passes: pass %d: %w", p, err)
		}
		res.Passes = append(res.Passes, time.Since(t))
		if cfg.AfterPass != nil {
			cfg.AfterPass(p)
		}
	}
	var cnt [4]byte
	if err := errs.Read(ctx, 0, cnt[:]); err != nil {
		return res, fmt.Errorf("passes: read error counter: %w", err)
	}
	res.Errors = binary.LittleEndian.Uint32(cnt[:])
	for i, b := range data {
		n := min(cfg.Verify, b.Size())
		for _, off := range []uint64{0, b.Size() - n} {
			got := make([]byte, n)
			if err := b.Read(ctx, off, got); err != nil {
				return res, fmt.Errorf("passes: read back buffer %d: %w", i, err)
			}
			for j := uint64(0); j < n; j += 4 {
				want := bufferBase(cfg.Seed, i) + uint32((off+j)/4) + uint32(cfg.Passes)
				if v := binary.LittleEndian.Uint32(got[j:]); v != want {
					return res, fmt.Errorf("passes: buffer %d element %d is %#x, want %#x", i, (off+j)/4, v, want)
				}
			}
			res.Verified += n
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}
