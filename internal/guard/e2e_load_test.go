package guard_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/testenv"
)

// TestDaemonBenign runs every testdata kernel through the daemon (guarded,
// as every tenant's PTX is) and compares each buffer with an unguarded run
// on the interpreter with the same inputs.
func TestDaemonBenign(t *testing.T) {
	files := kernelFiles(t)
	var sums []string
	for _, f := range files {
		sum := sha256.Sum256(readPTX(t, f))
		sums = append(sums, hex.EncodeToString(sum[:]))
	}
	// The vendor tenant runs the same PTX unguarded (allowlisted): on a GPU
	// that, not the interpreter, is the reference, since the hardware's
	// approximate instructions round differently from the interpreter's.
	env := testenv.Start(t, testenv.Options{Config: twoTenants(t, sums...)})
	ctx := ctxT(t)
	c, s := session(t, env, "victim")
	_, vendor := session(t, env, "vendor")
	onGPU := c.Backend() != "sim"
	for _, file := range files {
		src := readPTX(t, file)
		prog, err := s.LoadProgram(ctx, src, shortName(file))
		if err != nil {
			t.Fatalf("%s: load: %v", shortName(file), err)
		}
		plain, err := vendor.LoadProgram(ctx, src, shortName(file))
		if err != nil {
			t.Fatalf("%s: unguarded load: %v", shortName(file), err)
		}
		for _, kernel := range entries(parse(t, src)) {
			spec, ok := kernelSpecs[kernel]
			if !ok {
				continue // TestBenignIdentical reports it
			}
			t.Run(shortName(file)+"/"+kernel, func(t *testing.T) {
				br := newBenignRun(spec, 11)
				want, _ := br.run(t, parse(t, src), nil, kernel)
				// The allowlisted PTX, unguarded, with its pointer arguments
				// checked (8-byte scalars such as daxpy's double pass).
				unguarded := daemonRun(t, ctx, vendor, plain, kernel, spec, br)
				if onGPU {
					want = unguarded
				} else {
					for i := range want {
						if unguarded[i] != nil && !bytes.Equal(unguarded[i], want[i]) && kernel != "reduce_shfl" {
							t.Errorf("trusted run: argument %d differs from the interpreter's: %s", i, firstDiff(unguarded[i], want[i]))
						}
					}
				}
				got := daemonRun(t, ctx, s, prog, kernel, spec, br)
				for i := range got {
					if got[i] == nil {
						continue
					}
					if kernel == "reduce_shfl" && i == 1 {
						// Float atomics from blocks that run in parallel: the
						// order of additions, so the last bits, may differ.
						g, w := math.Float32frombits(binary.LittleEndian.Uint32(got[i])), math.Float32frombits(binary.LittleEndian.Uint32(want[i]))
						if math.Abs(float64(g-w)) > 1e-3*math.Max(1, math.Abs(float64(w))) {
							t.Errorf("sum %v, want %v", g, w)
						}
						continue
					}
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("argument %d differs from the unguarded run: %s", i, firstDiff(got[i], want[i]))
					}
				}
			})
		}
		prog.Close()
		plain.Close()
	}
	st, err := s.Stat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Violations != 0 || st.State != "active" {
		t.Errorf("after the benign corpus: %d violations, state %q", st.Violations, st.State)
	}
}

// TestTrustTiers: SASS-only modules are refused for guarded tenants and for
// trusted ones unless allowlisted; a fatbin with PTX is guarded; the
// isolated tier is not implemented yet.
func TestTrustTiers(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "fatbin")
	cubin := readPTX(t, filepath.Join(dir, "vecadd.sm_90.cubin"))
	sum := sha256.Sum256(cubin)
	env := testenv.Start(t, testenv.Options{Config: twoTenants(t, hex.EncodeToString(sum[:]))})
	ctx := ctxT(t)

	_, guarded := session(t, env, "victim")
	_, err := guarded.LoadProgram(ctx, cubin, "cubin")
	if !errors.Is(err, client.ErrUnsupported) || !strings.Contains(err.Error(), "trusted_modules") {
		t.Errorf("guarded tenant loading SASS: %v, want Unsupported naming the options", err)
	}
	for _, name := range []string{"vecadd.fatbin", "vecadd.compressed.fatbin"} {
		prog, err := guarded.LoadProgram(ctx, readPTX(t, filepath.Join(dir, name)), name)
		if err != nil {
			t.Errorf("guarded tenant loading %s (it carries PTX): %v", name, err)
			continue
		}
		if ks := prog.Kernels(); len(ks) == 0 {
			t.Errorf("%s: no kernels listed", name)
		}
		prog.Close()
	}

	vc, vendor := session(t, env, "vendor")
	_, err = vendor.LoadProgram(ctx, cubin, "cubin")
	// The allowlist lets it through the guard; the sim itself runs no SASS,
	// a GPU runs it.
	if vc.Backend() == "sim" {
		if !errors.Is(err, client.ErrUnsupported) || strings.Contains(err.Error(), "trusted_modules") {
			t.Errorf("trusted tenant loading an allowlisted cubin: %v, want the sim's own refusal of SASS", err)
		}
	} else if err != nil {
		t.Errorf("trusted tenant loading an allowlisted cubin on %s: %v", vc.Backend(), err)
	}
	other := append(bytes.Clone(cubin), 0)
	_, err = vendor.LoadProgram(ctx, other, "other")
	if !errors.Is(err, client.ErrUnsupported) || !strings.Contains(err.Error(), "trusted_modules") {
		t.Errorf("trusted tenant loading SASS not on the allowlist: %v, want the guard's refusal", err)
	}

	_, loner := session(t, env, "loner")
	// Each session is told its tenant's tier (the shim refuses code the
	// tier cannot run where it is loaded).
	for _, c := range []struct {
		s    *client.Session
		want client.TrustTier
	}{{guarded, client.TrustGuarded}, {vendor, client.TrustTrusted}, {loner, client.TrustIsolated}} {
		if have := c.s.Trust(); have != c.want {
			t.Errorf("%s: Trust() = %v, want %v", c.s.Tenant(), have, c.want)
		}
	}
	_, err = loner.LoadProgram(ctx, readPTX(t, filepath.Join("..", "..", "testdata", "kernels", "vecadd.ptx")), "v")
	if !errors.Is(err, client.ErrUnsupported) || !strings.Contains(err.Error(), "isolated") {
		t.Errorf("isolated tenant loading: %v, want Unsupported", err)
	}
}

// A module's .global variables move into the session's window: the host
// reaches them through cuModuleGetGlobal's answer, the kernel through the
// guard, and both see the same memory.
const globalsPTX = `
.version 8.0
.target sm_80
.address_size 64

.global .align 4 .u32 counter = 5;
.global .align 8 .u64 table[4] = {10, 20, 30, 40};
.global .align 8 .u64 self = generic(table);

.visible .entry bump(.param .u64 out)
{
	.reg .b64 	%rd<8>;
	.reg .b32 	%r<4>;
	atom.global.add.u32 	%r1, [counter], 1;
	mov.u64 	%rd1, table;
	ld.global.u64 	%rd2, [%rd1+16];
	ld.global.u64 	%rd3, [self];
	ld.global.u64 	%rd4, [%rd3+24];
	add.s64 	%rd5, %rd2, %rd4;
	ld.param.u64 	%rd6, [out];
	st.global.u64 	[%rd6], %rd5;
	ret;
}
`

func TestRelocatedGlobals(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: twoTenants(t)})
	ctx := ctxT(t)
	_, s := session(t, env, "victim")
	prog, err := s.LoadProgram(ctx, []byte(globalsPTX), "globals")
	if err != nil {
		t.Fatal(err)
	}
	addr, size, err := prog.Global(ctx, "counter")
	if err != nil {
		t.Fatal(err)
	}
	base, wsize := s.Window()
	if addr < base || addr+size > base+wsize || size != 4 {
		t.Fatalf("counter at %#x+%d, want inside the window %#x+%#x", addr, size, base, wsize)
	}
	out, err := s.CreateBuffer(ctx, 8)
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel(ctx, "bump")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Launch(k, client.LaunchConfig{Grid: client.Dim3{X: 1}, Block: client.Dim3{X: 32}}, out); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 8)
	if err := out.Read(ctx, 0, got); err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint64(got); v != 70 {
		t.Errorf("kernel read %d through relocated globals, want 30+40", v)
	}
	c := make([]byte, 4)
	if err := s.CopyFromDevice(ctx, c, client.Addr(addr), nil); err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(c); v != 5+32 {
		t.Errorf("counter = %d after 32 increments from 5", v)
	}
}

// TestAllowlistedPTXRunsUnguarded: a trusted tenant's PTX whose SHA-256 the
// operator allowlisted is loaded as it is (its module globals stay in module
// memory, outside the window), while the same PTX from a guarded tenant, or
// unlisted PTX from the trusted one, goes through the guard (globals relocated
// into the window).
func TestAllowlistedPTXRunsUnguarded(t *testing.T) {
	listed := []byte(globalsPTX)
	sum := sha256.Sum256(listed)
	vec := readPTX(t, filepath.Join("..", "..", "testdata", "kernels", "vecadd.ptx"))
	vsum := sha256.Sum256(vec)
	env := testenv.Start(t, testenv.Options{Config: twoTenants(t, hex.EncodeToString(sum[:]), hex.EncodeToString(vsum[:]))})
	ctx := ctxT(t)
	inWindow := func(s *client.Session, src []byte) bool {
		t.Helper()
		p, err := s.LoadProgram(ctx, src, "globals")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		addr, _, err := p.Global(ctx, "counter")
		if err != nil {
			t.Fatal(err)
		}
		base, size := s.Window()
		return addr >= base && addr < base+size
	}
	_, vendor := session(t, env, "vendor")
	_, victim := session(t, env, "victim")
	if inWindow(vendor, listed) {
		t.Error("allowlisted PTX of a trusted tenant was guarded (its global was relocated into the window)")
	}
	if !inWindow(victim, listed) {
		t.Error("a guarded tenant's PTX was not guarded, though its hash is allowlisted")
	}
	if !inWindow(vendor, append([]byte(globalsPTX), '\n')) {
		t.Error("unlisted PTX of a trusted tenant was not guarded")
	}
	// Allowlisted code still computes, with its pointer arguments checked.
	vecaddCheck(t, ctx, vendor)
}

// daemonRun launches kernel of prog in session s on the inputs of br and
// returns the contents of its buffer arguments afterwards (nil for scalars).
func daemonRun(t *testing.T, ctx context.Context, s *client.Session, prog *client.Program, kernel string, spec kspec, br *benignRun) [][]byte {
	t.Helper()
	k, err := prog.Kernel(ctx, kernel)
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([]*client.Buffer, len(br.data))
	params := make([]byte, 0, 64)
	info := k.Info()
	if len(info.Params) != len(spec.args) {
		t.Fatalf("%d parameters, spec has %d", len(info.Params), len(spec.args))
	}
	for i, a := range spec.args {
		end := int(info.Params[i].Offset + info.Params[i].Size)
		for len(params) < end {
			params = append(params, 0)
		}
		at := params[info.Params[i].Offset:]
		switch v := a.val.(type) {
		case nil:
			b, err := s.CreateBuffer(ctx, uint64(len(br.data[i])))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Write(ctx, 0, br.data[i]); err != nil {
				t.Fatal(err)
			}
			bufs[i] = b
			binary.LittleEndian.PutUint64(at, b.Addr())
		case int32:
			binary.LittleEndian.PutUint32(at, uint32(v))
		case uint32:
			binary.LittleEndian.PutUint32(at, v)
		case uint64:
			binary.LittleEndian.PutUint64(at, v)
		case float32:
			binary.LittleEndian.PutUint32(at, math.Float32bits(v))
		case float64:
			binary.LittleEndian.PutUint64(at, math.Float64bits(v))
		}
	}
	cfg := client.LaunchConfig{Grid: client.Dim3{X: spec.grid[0], Y: spec.grid[1], Z: spec.grid[2]},
		Block: client.Dim3{X: spec.block[0], Y: spec.block[1], Z: spec.block[2]}, SharedMem: spec.shared}
	if err := s.LaunchRaw(k, cfg, params); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatalf("%s through the daemon: %v", kernel, err)
	}
	out := make([][]byte, len(bufs))
	for i, b := range bufs {
		if b == nil {
			continue
		}
		out[i] = make([]byte, len(br.data[i]))
		if err := b.Read(ctx, 0, out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// firstDiff describes the first 4-byte word where got and want differ.
func firstDiff(got, want []byte) string {
	for i := 0; i+4 <= len(got) && i+4 <= len(want); i += 4 {
		g, w := binary.LittleEndian.Uint32(got[i:]), binary.LittleEndian.Uint32(want[i:])
		if g != w {
			return fmt.Sprintf("word %d: %#08x (%g as f32) vs %#08x (%g)", i/4, g, math.Float32frombits(g), w, math.Float32frombits(w))
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(got), len(want))
}
