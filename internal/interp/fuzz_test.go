package interp

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/ptx"
)

// FuzzCompile compiles arbitrary PTX that parses and runs every kernel that
// compiles on a small grid under a watchdog: neither step may panic or hang,
// whatever the input.
func FuzzCompile(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "kernels", "*.ptx"))
	for _, name := range files {
		if src, err := os.ReadFile(name); err == nil {
			f.Add(src)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			fuzzOne(t, src)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			panic("hang compiling or running:\n" + string(src))
		}
	})
}

func fuzzOne(t *testing.T, src []byte) {
	{
		m, err := ptx.Parse(src)
		if err != nil {
			return
		}
		p, err := Compile(m)
		if err != nil {
			return
		}
		mem := newDevMem()
		buf, _ := mem.alloc(1 << 12)
		addrs := map[string]uint64{}
		for _, g := range p.Globals() {
			if g.Size > 1<<16 {
				return
			}
			a, b := mem.alloc(int(g.Size))
			copy(b, g.Init)
			addrs[g.Name] = a
		}
		if err := p.Bind(addrs); err != nil {
			t.Errorf("bind: %v", err)
			return
		}
		for _, name := range p.Kernels() {
			k, err := p.Kernel(name)
			if err != nil {
				t.Error(err)
				return
			}
			params := make([]byte, k.ParamSize())
			for _, pr := range k.Params() {
				if pr.Size == 8 {
					binary.LittleEndian.PutUint64(params[pr.Offset:], buf)
				} else if pr.Size == 4 {
					binary.LittleEndian.PutUint32(params[pr.Offset:], 64)
				}
			}
			block := uint32(min(k.Attributes().MaxThreadsPerBlock, 33))
			_, _ = k.Run(context.Background(), Launch{Grid: dim(2, 1, 1), Block: dim(block, 1, 1), DynamicShared: 256,
				Params: params, Global: mem, MaxInstructions: 20000, Workers: 1, NsPerInstruction: 1})
		}
	}
}
