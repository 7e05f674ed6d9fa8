package driver

import (
	"bytes"
	"fmt"
	"math"
	"sync"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/ptx"
	"github.com/gpuos/gpuos/internal/sched"
	"github.com/gpuos/gpuos/internal/slice"
)

// Kernel slicing: after the guard, a PTX program gets a sliced twin of each
// kernel that can run as slices (package slice), loaded in the same module so
// the two share its globals. A launch of such a kernel is submitted as a
// sliceable command: the scheduler may issue its grid in slices of the twin,
// so that higher-class work runs between them. Clients never see the twins.

// ErrTwin: a client asked for a sliced twin by name.
var ErrTwin = v1.Errorf(v1.CodeNotFound, "no such kernel (that name is reserved for gpuos's sliced twins)")

// programSlicing is what a program loaded with twins knows of them.
type programSlicing struct {
	twins map[string]bool    // kernels that have one
	dev   backend.DeviceInfo // for the waves of their launches

	mu  sync.Mutex
	est map[string]*sched.Estimate // cost history per kernel, shared by its launches
}

// kernelSlicing is a kernel's twin, ready to launch.
type kernelSlicing struct {
	twin  backend.Function
	extra [slice.NumParams]uint32 // offsets of the twin's extra parameters
	est   *sched.Estimate
	dev   *backend.DeviceInfo
}

// sliceProgram adds twins to a PTX image, unless slicing is off; it returns
// the image to load and, if any kernel got a twin, what to remember of them.
func (d *Driver) sliceProgram(image []byte) ([]byte, *programSlicing) {
	if d.opts.Sched.SliceTarget < 0 || !isPTX(image) {
		return image, nil
	}
	m, err := ptx.Parse(bytes.TrimRight(image, "\x00"))
	if err != nil {
		return image, nil // the backend reports what is wrong with it
	}
	res, err := slice.Transform(m)
	if err != nil || len(res.Sliced) == 0 {
		return image, nil
	}
	ps := &programSlicing{twins: map[string]bool{}, est: map[string]*sched.Estimate{}, dev: d.dev.Info()}
	for _, k := range res.Sliced {
		ps.twins[k] = true
	}
	return m.Bytes(), ps
}

// kernel returns a kernel's twin, or nil if it has none.
func (ps *programSlicing) kernel(mod backend.Module, name string) (*kernelSlicing, error) {
	if ps == nil || !ps.twins[name] {
		return nil, nil
	}
	twin, err := mod.Function(slice.Twin(name))
	if err != nil {
		return nil, fmt.Errorf("sliced twin of %s: %w", name, err)
	}
	ps.mu.Lock()
	est := ps.est[name]
	if est == nil {
		est = &sched.Estimate{}
		ps.est[name] = est
	}
	ps.mu.Unlock()
	ks := &kernelSlicing{twin: twin, est: est, dev: &ps.dev}
	params := twin.Params()
	if len(params) < slice.NumParams {
		return nil, fmt.Errorf("sliced twin of %s has %d parameters", name, len(params))
	}
	for i := range ks.extra {
		ks.extra[i] = params[len(params)-slice.NumParams+i].Offset
	}
	return ks, nil
}

// prepare makes a launch of the kernel sliceable along its grid.
// sms is the SMs the stream's kernels run on (0: the device's).
func (ks *kernelSlicing) prepare(c *sched.Command, st backend.Stream, sms int, cfg backend.LaunchConfig, params []byte) {
	units := slice.Units(cfg.Grid)
	if ks == nil || units < 2 {
		return
	}
	c.Units, c.Estimate = units, ks.est
	c.Wave = waveUnits(ks.dev, sms, ks.twin.Attributes(), cfg)
	c.IssueUnits = func(lo, hi uint32) error {
		grid, offset, err := slice.Plan(cfg.Grid, lo, hi)
		if err != nil {
			return err
		}
		part := cfg
		part.Grid = grid
		return st.Launch(ks.twin, part, slice.Params(params, ks.extra, offset, cfg.Grid))
	}
}

// waveUnits is how many units (slices along slice.Dim) of a launch the
// device holds at once: its SMs times the blocks of the launch one SM holds,
// over the blocks in a unit; 0 if the device or the kernel does not say.
// The scheduler keeps slices that must leave room for a higher class below
// it (sched.Choice.Reserve). streamSMs, if positive, is the SMs the launch's
// stream runs on (a partition's, reserve_sms): its waves are of those.
func waveUnits(dev *backend.DeviceInfo, streamSMs int, fa backend.FuncAttributes, cfg backend.LaunchConfig) uint32 {
	sms := uint64(max(dev.SMCount, 0))
	if streamSMs > 0 {
		sms = uint64(streamSMs)
	}
	if sms == 0 {
		sms = deviceAttr(dev, cuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
	}
	perUnit := uint64(1)
	d := slice.Dim(cfg.Grid)
	for i, g := range cfg.Grid {
		if i != d {
			perUnit *= uint64(max(g, 1))
		}
	}
	threads := uint64(cfg.Block[0]) * uint64(cfg.Block[1]) * uint64(cfg.Block[2])
	resident := sms * blocksPerSM(dev, fa, threads, uint64(cfg.SharedMem))
	if resident == 0 || perUnit > resident {
		return 0
	}
	return uint32(min(resident/perUnit, math.MaxUint32))
}

// blocksPerSM is how many blocks of threads threads (and dynShared bytes of
// dynamic shared memory) one SM holds, as the CUDA occupancy calculator
// counts: the scarcest of threads (by whole warps), blocks, registers (256 a
// warp at a time) and shared memory (128-byte units plus the per-block
// reservation). 0 if the device does not report its limits.
func blocksPerSM(dev *backend.DeviceInfo, fa backend.FuncAttributes, threads, dynShared uint64) uint64 {
	const regUnit, sharedUnit = 256, 128
	warp := max(deviceAttr(dev, cuda.CU_DEVICE_ATTRIBUTE_WARP_SIZE), 1)
	maxThreads := deviceAttr(dev, cuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
	if threads == 0 || maxThreads == 0 {
		return 0
	}
	warps := (threads + warp - 1) / warp
	n := maxThreads / (warps * warp)
	if b := deviceAttr(dev, cuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR); b > 0 {
		n = min(n, b)
	}
	if regs := uint64(max(fa.NumRegs, 0)); regs > 0 {
		perBlock := (regs*warp + regUnit - 1) / regUnit * regUnit * warps
		if perSM := deviceAttr(dev, cuda.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR); perSM > 0 {
			n = min(n, perSM/perBlock)
		}
	}
	if shared := uint64(max(fa.SharedSizeBytes, 0)) + dynShared; shared > 0 {
		perBlock := (shared+sharedUnit-1)/sharedUnit*sharedUnit + deviceAttr(dev, cuda.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
		if perSM := deviceAttr(dev, cuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR); perSM > 0 {
			n = min(n, perSM/perBlock)
		}
	}
	return n
}

func deviceAttr(dev *backend.DeviceInfo, a cuda.CUdevice_attribute) uint64 {
	if int(a) < len(dev.Attributes) {
		return uint64(max(dev.Attributes[a], 0))
	}
	return 0
}
