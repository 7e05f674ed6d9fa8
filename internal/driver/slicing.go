package driver

import (
	"bytes"
	"fmt"
	"sync"

	v1 "github.com/gpuos/gpuos/api/v1"
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
	twins map[string]bool // kernels that have one

	mu  sync.Mutex
	est map[string]*sched.Estimate // cost history per kernel, shared by its launches
}

// kernelSlicing is a kernel's twin, ready to launch.
type kernelSlicing struct {
	twin  backend.Function
	extra [slice.NumParams]uint32 // offsets of the twin's extra parameters
	est   *sched.Estimate
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
	ps := &programSlicing{twins: map[string]bool{}, est: map[string]*sched.Estimate{}}
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
	ks := &kernelSlicing{twin: twin, est: est}
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
func (ks *kernelSlicing) prepare(c *sched.Command, st backend.Stream, cfg backend.LaunchConfig, params []byte) {
	units := slice.Units(cfg.Grid)
	if ks == nil || units < 2 {
		return
	}
	c.Units, c.Estimate = units, ks.est
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
