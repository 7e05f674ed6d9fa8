package sim

import (
	"context"
	"fmt"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/interp"
	"github.com/gpuos/gpuos/internal/ptx"
)

// compilePTX parses PTX text and compiles it for the interpreter. An
// instruction the interpreter does not implement is a typed Unsupported
// error here, at load, naming it.
func compilePTX(text []byte) (program, error) {
	mod, err := ptx.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parse PTX: %w", err)
	}
	p, err := interp.Compile(mod)
	if err != nil {
		return nil, fmt.Errorf("compile PTX: %w", err)
	}
	return interpProgram{p}, nil
}

// interpProgram and interpKernel adapt the interpreter to program and kernel.
type interpProgram struct{ p *interp.Program }

func (ip interpProgram) kernel(name string) (kernel, error) {
	k, err := ip.p.Kernel(name)
	if err != nil {
		return nil, err
	}
	return interpKernel{k}, nil
}

func (ip interpProgram) globals() []globalVar {
	gs := ip.p.Globals()
	out := make([]globalVar, len(gs))
	for i, g := range gs {
		rs := make([]reloc, len(g.Relocs))
		for j, r := range g.Relocs {
			rs[j] = reloc{offset: r.Offset, symbol: r.Symbol, addend: r.Addend}
		}
		out[i] = globalVar{name: g.Name, isConst: g.Const, size: g.Size, align: g.Align, init: g.Init, relocs: rs}
	}
	return out
}

func (ip interpProgram) bind(addr map[string]uint64) error { return ip.p.Bind(addr) }

type interpKernel struct{ k *interp.Kernel }

func (ik interpKernel) params() []backend.Param {
	ps := ik.k.Params()
	out := make([]backend.Param, len(ps))
	for i, p := range ps {
		out[i] = backend.Param{Offset: uint32(p.Offset), Size: uint32(p.Size)}
	}
	return out
}

func (ik interpKernel) attributes() kernelAttributes {
	a := ik.k.Attributes()
	return kernelAttributes{
		staticShared:       a.StaticShared,
		localPerThread:     a.LocalPerThread,
		numRegs:            a.NumRegs,
		maxThreadsPerBlock: a.MaxThreadsPerBlock,
		ptxVersion:         a.PTXVersion,
	}
}

func (ik interpKernel) run(ctx context.Context, l launchArgs) (KernelWork, error) {
	r, err := ik.k.Run(ctx, interp.Launch{
		Grid:             l.grid,
		Block:            l.block,
		DynamicShared:    l.dynamicShared,
		Params:           l.params,
		Global:           l.global,
		StartNs:          l.startNs,
		NsPerInstruction: l.nsPerInstruction,
		Workers:          l.workers,
		MaxInstructions:  l.maxInstructions,
		SMs:              l.sms,
	})
	return KernelWork{
		Instructions:       r.Instructions,
		GlobalBytesRead:    r.GlobalBytesRead,
		GlobalBytesWritten: r.GlobalBytesWritten,
		Blocks:             r.Blocks,
	}, err
}
