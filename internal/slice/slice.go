package slice

import (
	"encoding/binary"
	"fmt"
	"strings"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ptx"
)

// Errors returned by this package.
var (
	// ErrNotSliceable: a kernel was left whole (Result.Refused says why).
	ErrNotSliceable = v1.Errorf(v1.CodeUnsupported, "kernel cannot be sliced")
	// ErrBadPlan: slice bounds outside the grid.
	ErrBadPlan = v1.Errorf(v1.CodeInvalidArgument, "invalid slice")
)

// Suffix names a kernel's sliced twin: kernel + Suffix.
const Suffix = "__gpuos_sliced"

// NumParams is how many parameters a twin has beyond its kernel's: the block
// offset (x, y, z) and the full grid (x, y, z), each a .u32, appended after
// the kernel's own parameters.
const NumParams = 6

// paramNames are the twin's extra parameters, in order.
var paramNames = [NumParams]string{
	"__gpuos_slice_ox", "__gpuos_slice_oy", "__gpuos_slice_oz",
	"__gpuos_slice_nx", "__gpuos_slice_ny", "__gpuos_slice_nz",
}

// Twin returns the name of a kernel's sliced twin.
func Twin(kernel string) string { return kernel + Suffix }

// IsTwin reports whether a name is a twin's (clients never see those).
func IsTwin(name string) bool { return strings.HasSuffix(name, Suffix) }

// Result says what Transform did.
type Result struct {
	Sliced  []string          // kernels that now have a twin
	Refused map[string]string // kernels left whole, and why
}

// Transform adds a sliced twin of every kernel of m that can run as slices.
// The original kernels are untouched (the twin is a copy), so a module
// transformed here loads and runs exactly as before; module-scope variables
// are shared by a kernel and its twin.
func Transform(m *ptx.Module) (Result, error) {
	res := Result{Refused: map[string]string{}}
	var kernels []*ptx.Function
	for _, f := range m.Functions() {
		if f.Entry && f.Body != nil {
			kernels = append(kernels, f)
		}
	}
	if len(kernels) == 0 {
		return res, nil
	}
	for _, it := range m.Items {
		if _, ok := it.(*ptx.Section); ok {
			for _, k := range kernels {
				res.Refused[k.Name] = "the module carries debug sections, which name its functions' labels"
			}
			return res, nil
		}
	}
	funcs := map[string]*ptx.Function{}
	for _, f := range m.Functions() {
		if f.Body != nil {
			funcs[f.Name] = f
		}
	}
	var keep []*ptx.Function
	for _, k := range kernels {
		if why := refusal(k, funcs); why != "" {
			res.Refused[k.Name] = why
			continue
		}
		if m.Function(Twin(k.Name)) != nil {
			res.Refused[k.Name] = "its twin's name is taken"
			continue
		}
		keep = append(keep, k)
	}
	if len(keep) == 0 {
		return res, nil
	}
	// A deep copy of the module by printing and parsing it: the twins are
	// rewritten in place without touching the originals.
	cp, err := ptx.Parse(m.Bytes())
	if err != nil {
		return Result{}, fmt.Errorf("copy module: %w", err)
	}
	for _, k := range keep {
		twin := cp.Function(k.Name)
		if err := rewrite(twin); err != nil {
			res.Refused[k.Name] = err.Error()
			continue
		}
		m.Items = append(m.Items, twin)
		res.Sliced = append(res.Sliced, k.Name)
	}
	return res, nil
}

// Special registers a sliced kernel must not read: a slice launch would give
// them per-slice values, and cluster ones imply co-scheduled blocks.
var forbiddenRegs = []string{"%gridid", "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid",
	"%cluster_ctarank", "%cluster_nctarank", "%is_explicit_cluster"}

// Instructions that need blocks of one cluster (or the grid) to run together.
var forbiddenOps = map[string]bool{"barrier.cluster": true, "mapa": true, "getctarank": true}

// Directives that ask for clusters.
var forbiddenDirectives = map[string]bool{".reqnctapercluster": true, ".explicitcluster": true, ".maxclusterrank": true}

// refusal says why kernel k cannot be sliced, or "" if it can.
func refusal(k *ptx.Function, funcs map[string]*ptx.Function) string {
	for _, d := range k.Directives {
		if forbiddenDirectives[d.Name] {
			return "it asks for thread-block clusters (" + d.Name + ")"
		}
	}
	why := ""
	// The kernel and every function it calls, directly or not.
	seen := map[string]bool{k.Name: true}
	work := []*ptx.Function{k}
	for len(work) > 0 && why == "" {
		f := work[0]
		work = work[1:]
		ptx.Inspect(f.Body, func(n ptx.Node) bool {
			if why != "" {
				return false
			}
			switch n := n.(type) {
			case *ptx.Reg:
				if bare := n.Name == "%ctaid" || n.Name == "%nctaid"; bare {
					why = "it reads " + n.Name + " as a vector"
				}
				for _, r := range forbiddenRegs {
					if n.Name == r || strings.HasPrefix(n.Name, r+".") {
						why = "it reads " + n.Name
					}
				}
				if f != k && (strings.HasPrefix(n.Name, "%ctaid.") || strings.HasPrefix(n.Name, "%nctaid.")) {
					why = "device function " + f.Name + " reads " + n.Name
				}
			case *ptx.Instruction:
				name := n.Opcode
				if len(n.Mods) > 0 {
					name += n.Mods[0]
				}
				if forbiddenOps[n.Opcode] || forbiddenOps[name] {
					why = "it uses " + name + ", which needs co-scheduled blocks"
				}
				if n.Opcode == "call" {
					callee := callTarget(n)
					if callee == "" {
						why = "it makes an indirect call"
						return false
					}
					if g := funcs[callee]; g != nil && !seen[callee] {
						seen[callee] = true
						work = append(work, g)
					}
				}
				if n.Opcode == "brx" {
					why = "it branches indirectly"
				}
			}
			return true
		})
		if why == "" {
			why = spinsOnMemory(f)
		}
	}
	return why
}

// callTarget returns the name a call instruction calls, or "" for an
// indirect call (through a register).
func callTarget(in *ptx.Instruction) string {
	for _, op := range in.Operands {
		switch o := op.(type) {
		case *ptx.Symbol:
			return o.Name
		case *ptx.Reg:
			return ""
		}
	}
	return ""
}

// flatten lists a body's instructions and labels in order.
func flatten(b *ptx.Block) []ptx.Stmt {
	var out []ptx.Stmt
	for _, s := range b.Stmts {
		switch s := s.(type) {
		case *ptx.Block:
			out = append(out, flatten(s)...)
		case *ptx.Instruction, *ptx.Label:
			out = append(out, s)
		}
	}
	return out
}

// spinsOnMemory reports a loop that waits on memory other blocks write — a
// conditional backward branch whose condition depends on a read of global
// memory made to see other blocks' writes (a volatile, acquire or
// relaxed-scoped load, or an atomic's result) — the shape of a grid-wide
// barrier or of a block waiting for a later one. Slices run one after another, so such a
// kernel could wait for a block of a slice not yet launched. The check is
// conservative: it refuses some kernels that would be fine.
func spinsOnMemory(f *ptx.Function) string {
	stmts := flatten(f.Body)
	at := map[string]int{}
	for i, s := range stmts {
		if l, ok := s.(*ptx.Label); ok {
			at[l.Name] = i
		}
	}
	for i, s := range stmts {
		in, ok := s.(*ptx.Instruction)
		if !ok || in.Opcode != "bra" || in.Guard == nil {
			continue
		}
		target := ""
		for _, op := range in.Operands {
			if sym, ok := op.(*ptx.Symbol); ok {
				target = sym.Name
			}
		}
		start, ok := at[target]
		if !ok || start > i {
			continue // forward, or unknown: not a loop
		}
		if ld := waitsOn(stmts[start : i+1]); ld != nil {
			return "a loop waits on global memory (" + ld.Name() + "): it may rely on blocks running together"
		}
	}
	return ""
}

// waitsOn returns the flag read whose value decides whether a loop goes
// round again: the value flows, through any instructions of the loop, into a
// comparison (setp) or the branch. Twice round, for values carried from one
// iteration to the next.
func waitsOn(loop []ptx.Stmt) *ptx.Instruction {
	taint := map[string]*ptx.Instruction{}
	for range 2 {
		for _, s := range loop {
			in, ok := s.(*ptx.Instruction)
			if !ok || len(in.Operands) == 0 {
				continue
			}
			var from *ptx.Instruction
			if flagRead(in) {
				from = in
			}
			for _, op := range in.Operands[1:] {
				ptx.Inspect(op, func(n ptx.Node) bool {
					if r, ok := n.(*ptx.Reg); ok && taint[r.Name] != nil && from == nil {
						from = taint[r.Name]
					}
					return true
				})
			}
			if in.Guard != nil && in.Guard.Reg != nil && taint[in.Guard.Reg.Name] != nil && in.Opcode == "bra" {
				return taint[in.Guard.Reg.Name]
			}
			if from == nil {
				continue
			}
			if in.Opcode == "setp" {
				return from
			}
			ptx.Inspect(in.Operands[0], func(n ptx.Node) bool {
				if r, ok := n.(*ptx.Reg); ok {
					taint[r.Name] = from
				}
				return true
			})
		}
	}
	return nil
}

// flagRead reports an instruction that reads global memory so as to see
// other blocks' writes.
func flagRead(in *ptx.Instruction) bool {
	space := in.StateSpace()
	if space != ptx.SpaceGlobal && space != ptx.SpaceNone {
		return false
	}
	switch in.Opcode {
	case "ld", "ldu":
		return in.HasMod(".volatile") || in.HasMod(".acquire") ||
			(in.HasMod(".relaxed") && (in.HasMod(".gpu") || in.HasMod(".sys")))
	case "atom":
		if len(in.Operands) == 0 {
			return false
		}
		_, sink := in.Operands[0].(*ptx.Sink)
		return !sink
	}
	return false
}

// rewrite turns a copy of a kernel into its twin: renamed, with the extra
// parameters, and reading its block index as %ctaid plus the offset and its
// grid size from the parameters. The values are computed once at entry
// (they are constant in a block) into fresh registers.
func rewrite(f *ptx.Function) error {
	for _, p := range f.Params {
		for _, n := range paramNames {
			if p.Name == n {
				return fmt.Errorf("parameter %s is taken", n)
			}
		}
	}
	f.Name = Twin(f.Name)
	for _, n := range paramNames {
		f.Params = append(f.Params, &ptx.Var{Space: ptx.SpaceParam, Type: ptx.TypeU32, Name: n})
	}
	dims := [3]string{"x", "y", "z"}
	var vals [NumParams]*ptx.Reg // offsets then grid sizes
	var block [3]*ptx.Reg        // %ctaid + offset
	for i := range vals {
		r, err := f.NewReg("gpuos_slice", ptx.TypeU32)
		if err != nil {
			return err
		}
		vals[i] = r
	}
	for i := range block {
		r, err := f.NewReg("gpuos_slice", ptx.TypeU32)
		if err != nil {
			return err
		}
		block[i] = r
	}
	replace := map[string]string{}
	for i, d := range dims {
		replace["%ctaid."+d] = block[i].Name
		replace["%nctaid."+d] = vals[3+i].Name
	}
	// Rename the special registers everywhere first, then add the entry
	// code, which alone reads the real %ctaid.
	ptx.Inspect(f.Body, func(n ptx.Node) bool {
		if r, ok := n.(*ptx.Reg); ok {
			if to, ok := replace[r.Name]; ok {
				r.Name = to
			}
		}
		return true
	})
	var entry []ptx.Stmt
	for i := range vals {
		entry = append(entry, ptx.NewInstruction("ld.param.u32", vals[i], &ptx.Address{Base: &ptx.Symbol{Name: paramNames[i]}}))
	}
	for i, d := range dims {
		// ptxas reads special registers only through mov ("Special register
		// argument not allowed for instruction 'add'", seen on the H100).
		entry = append(entry,
			ptx.NewInstruction("mov.u32", block[i], &ptx.Reg{Name: "%ctaid." + d}),
			ptx.NewInstruction("add.u32", block[i], block[i], vals[i]))
	}
	at := 0
	for at < len(f.Body.Stmts) {
		if _, ok := f.Body.Stmts[at].(*ptx.Var); !ok {
			break
		}
		at++
	}
	f.Body.Stmts = append(f.Body.Stmts[:at], append(entry, f.Body.Stmts[at:]...)...)
	return nil
}

// Dim is the grid dimension slices divide: the outermost one with more than
// one block (z, else y, else x). A slice is a whole number of planes (or
// rows, or blocks) of the grid along it.
func Dim(grid [3]uint32) int {
	switch {
	case grid[2] > 1:
		return 2
	case grid[1] > 1:
		return 1
	}
	return 0
}

// Units is how many slices a grid can be cut into at most: its extent along Dim.
func Units(grid [3]uint32) uint32 { return grid[Dim(grid)] }

// Plan is the launch of the slice [lo, hi) of a grid along Dim: the slice's
// grid and block offset.
func Plan(grid [3]uint32, lo, hi uint32) (sliceGrid, offset [3]uint32, err error) {
	d := Dim(grid)
	if lo >= hi || hi > grid[d] {
		return grid, offset, fmt.Errorf("%w: [%d, %d) of %d", ErrBadPlan, lo, hi, grid[d])
	}
	sliceGrid = grid
	sliceGrid[d] = hi - lo
	offset[d] = lo
	return sliceGrid, offset, nil
}

// Params returns the twin's parameter buffer: the kernel's own (params) with
// the offset and the full grid written at the offsets of the twin's last
// NumParams parameters (extra, from the loaded twin's parameter layout).
func Params(params []byte, extra [NumParams]uint32, offset, grid [3]uint32) []byte {
	size := uint32(len(params))
	for _, o := range extra {
		size = max(size, o+4)
	}
	buf := make([]byte, size)
	copy(buf, params)
	for i := range 3 {
		binary.LittleEndian.PutUint32(buf[extra[i]:], offset[i])
		binary.LittleEndian.PutUint32(buf[extra[3+i]:], grid[i])
	}
	return buf
}
