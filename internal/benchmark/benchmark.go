package benchmark

import (
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/backend"
)

// benchPTX holds the empty kernel and the memory-bound scale_copy kernel
// (testdata/kernels/bench.cu compiled by nvcc 13.0 for sm_80).
//
//go:embed bench.ptx
var benchPTX []byte

// StreamPTX holds scale_copy32, the memory-bound kernel every side runs. An
// operator allowlists its SHA-256 for the trusted session.
//
//go:embed stream.ptx
var StreamPTX []byte

// Options configure Run.
type Options struct {
	Native  backend.Device  // the backend opened directly by this process
	Session *client.Session // a gpuos session on the same kind of device (guarded tenant)
	// Trusted, if set, is a session of a trusted tenant for which StreamPTX is
	// allowlisted: it runs the memory-bound kernel unguarded, which measures
	// gpuos's own overhead apart from the guard's.
	Trusted *client.Session
	Quick   bool      // small sizes and counts, for tests and the software GPU
	Rounds  int       // alternations of native and gpuos per measurement (default 3)
	Log     io.Writer // progress lines; nil for none
}

// Result is one measurement: the median of the native and the gpuos runs.
type Result struct {
	Name   string  `json:"name"`
	Unit   string  `json:"unit"`
	Higher bool    `json:"higher_is_better"`
	Native float64 `json:"native"`
	GPUOS  float64 `json:"gpuos"`
	// Ratio is gpuos / native.
	Ratio float64 `json:"ratio"`
	// Target is the acceptance bound, e.g. ">= 0.7x native"; Pass whether it holds.
	Target string `json:"target,omitempty"`
	Pass   *bool  `json:"pass,omitempty"`
	Note   string `json:"note,omitempty"`
}

type sizes struct {
	launches, latencyIters, copyBytes, allocIters, kernelFloats int
}

func (o Options) sizes() sizes {
	if o.Quick {
		return sizes{launches: 2000, latencyIters: 50, copyBytes: 8 << 20, allocIters: 50, kernelFloats: 1 << 16}
	}
	return sizes{launches: 100000, latencyIters: 2000, copyBytes: 256 << 20, allocIters: 1000, kernelFloats: 64 << 20}
}

// side is one way of running the measurements: native or through gpuos.
type side interface {
	launchThroughput(n int) (time.Duration, error)
	launchSync(iters int) ([]time.Duration, error)
	smallCopy(iters int) ([]time.Duration, error)
	copyBandwidth(n int, pinned, toDevice bool) (time.Duration, error) // 0: not available
	allocFree(iters int) ([]time.Duration, error)                      // nil: not available
	kernelTime(floats int) (time.Duration, error)
	close()
}

// Run runs every measurement and returns the results in a fixed order.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	z := o.sizes()
	nat, err := newNative(o.Native, z)
	if err != nil {
		return nil, fmt.Errorf("native side: %w", err)
	}
	defer nat.close()
	gos, err := newGPUOS(ctx, o.Session, z)
	if err != nil {
		return nil, fmt.Errorf("gpuos side: %w", err)
	}
	gos.sms = nat.sms // the same kind of device: the same launch shape
	defer gos.close()
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}

	// each runs f natively and on the gpuos side g, alternating, and keeps
	// every sample.
	each := func(name string, g side, f func(side) ([]float64, error)) (nv, gv []float64, err error) {
		for r := 0; r < o.Rounds; r++ {
			for i, s := range []side{nat, g} {
				v, err := f(s)
				if err != nil {
					return nil, nil, fmt.Errorf("%s (%s): %w", name, []string{"native", "gpuos"}[i], err)
				}
				if i == 0 {
					nv = append(nv, v...)
				} else {
					gv = append(gv, v...)
				}
			}
		}
		logf("%-34s done", name)
		return nv, gv, nil
	}
	us := func(ds []time.Duration) []float64 {
		out := make([]float64, len(ds))
		for i, d := range ds {
			out[i] = float64(d) / 1e3
		}
		return out
	}
	var results []Result
	add := func(r Result, nv, gv []float64) {
		r.Native, r.GPUOS = median(nv), median(gv)
		if r.Native > 0 {
			r.Ratio = r.GPUOS / r.Native
		}
		results = append(results, r)
	}

	nv, gv, err := each("async empty launch throughput", gos, func(s side) ([]float64, error) {
		d, err := s.launchThroughput(z.launches)
		return []float64{float64(z.launches) / d.Seconds()}, err
	})
	if err != nil {
		return nil, err
	}
	add(Result{Name: "async empty launch", Unit: "launches/s", Higher: true, Target: ">= 0.7x native"}, nv, gv)

	nv, gv, err = each("launch + synchronize", gos, func(s side) ([]float64, error) {
		ds, err := s.launchSync(z.latencyIters)
		return us(ds), err
	})
	if err != nil {
		return nil, err
	}
	add(Result{Name: "launch + synchronize", Unit: "µs", Target: "<= native + 10 µs"}, nv, gv)

	nv, gv, err = each("64-byte synchronous HtoD copy", gos, func(s side) ([]float64, error) {
		ds, err := s.smallCopy(z.latencyIters)
		return us(ds), err
	})
	if err != nil {
		return nil, err
	}
	add(Result{Name: "64 B synchronous HtoD copy", Unit: "µs"}, nv, gv)

	for _, c := range []struct {
		name          string
		pinned, toDev bool
		target        string
	}{
		{"HtoD pinned", true, true, ">= 0.9x native"},
		{"DtoH pinned", true, false, ">= 0.9x native"},
		{"HtoD pageable", false, true, ">= 1.0x native"},
		{"DtoH pageable", false, false, ""},
	} {
		unavailable := false
		nv, gv, err = each(c.name, gos, func(s side) ([]float64, error) {
			d, err := s.copyBandwidth(z.copyBytes, c.pinned, c.toDev)
			if d == 0 {
				unavailable = true
				return nil, err
			}
			return []float64{float64(z.copyBytes) / d.Seconds() / 1e9}, err
		})
		if err != nil {
			return nil, err
		}
		r := Result{Name: fmt.Sprintf("%s %s", c.name, sizeName(z.copyBytes)), Unit: "GB/s", Higher: true, Target: c.target}
		if unavailable && len(gv) == 0 {
			r.Note = "this transport has no pinned client memory"
			r.Target = ""
		}
		add(r, nv, gv)
	}

	noAlloc := false
	nv, gv, err = each("alloc + free 1 MiB", gos, func(s side) ([]float64, error) {
		ds, err := s.allocFree(z.allocIters)
		if ds == nil && err == nil {
			noAlloc = true
		}
		return us(ds), err
	})
	if err != nil {
		return nil, err
	}
	r := Result{Name: "alloc + free 1 MiB", Unit: "µs", Target: "<= 2x native"}
	if noAlloc {
		r.Note, r.Target = "the backend offers no native allocator", ""
	}
	add(r, nv, gv)

	bandwidth := func(s side) ([]float64, error) {
		d, err := s.kernelTime(z.kernelFloats)
		if d == 0 {
			return nil, err
		}
		return []float64{2 * 4 * float64(z.kernelFloats) / d.Seconds() / 1e9}, err
	}
	nv, gv, err = each("memory-bound kernel, guarded", gos, bandwidth)
	if err != nil {
		return nil, err
	}
	add(Result{Name: fmt.Sprintf("memory-bound kernel %s, guarded", sizeName(4*z.kernelFloats)), Unit: "GB/s", Higher: true,
		Target: ">= 0.95x native", Note: "the PTX guard's overhead (issue 5: at most 5%)"}, nv, gv)
	if o.Trusted != nil {
		tr, err := newGPUOS(ctx, o.Trusted, z)
		if err != nil {
			return nil, fmt.Errorf("trusted side: %w", err)
		}
		defer tr.close()
		tr.sms = nat.sms
		nv, gv, err = each("memory-bound kernel, trusted", tr, bandwidth)
		if err != nil {
			return nil, err
		}
		add(Result{Name: fmt.Sprintf("memory-bound kernel %s, trusted", sizeName(4*z.kernelFloats)), Unit: "GB/s", Higher: true,
			Target: ">= 0.98x native", Note: "allowlisted PTX, unguarded: gpuos's own overhead"}, nv, gv)
	}

	for i := range results {
		judge(&results[i])
	}
	return results, nil
}

func judge(r *Result) {
	if r.Native == 0 || r.GPUOS == 0 || r.Target == "" {
		r.Target = ""
		return
	}
	var ok bool
	switch r.Target {
	case ">= 0.7x native":
		ok = r.Ratio >= 0.7
	case ">= 0.9x native":
		ok = r.Ratio >= 0.9
	case ">= 1.0x native":
		ok = r.Ratio >= 1.0
	case ">= 0.98x native":
		ok = r.Ratio >= 0.98
	case ">= 0.95x native":
		ok = r.Ratio >= 0.95
	case "<= 2x native":
		ok = r.Ratio <= 2
	case "<= native + 10 µs":
		ok = r.GPUOS <= r.Native+10
	default:
		return
	}
	r.Pass = &ok
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// scaleParams packs scale_copy32(in, out, n, s).
func scaleParams(in, out uint64, n int, s float32) []byte {
	p := make([]byte, 24)
	binary.LittleEndian.PutUint64(p[0:], in)
	binary.LittleEndian.PutUint64(p[8:], out)
	binary.LittleEndian.PutUint32(p[16:], uint32(n))
	binary.LittleEndian.PutUint32(p[20:], math.Float32bits(s))
	return p
}

// kernelGrid is a grid-stride launch shape that fills the device.
func kernelGrid(sms int) ([3]uint32, [3]uint32) {
	return [3]uint32{uint32(max(sms, 1) * 8), 1, 1}, [3]uint32{256, 1, 1}
}

// Table writes results as a table.
func Table(w io.Writer, rs []Result) {
	fmt.Fprintf(w, "%-32s %14s %14s %8s  %-18s %s\n", "measurement", "native", "gpuos", "ratio", "target", "")
	for _, r := range rs {
		verdict := ""
		if r.Pass != nil {
			verdict = map[bool]string{true: "pass", false: "FAIL"}[*r.Pass]
		}
		g := fmt.Sprintf("%.3g %s", r.GPUOS, r.Unit)
		if r.GPUOS == 0 {
			g = "n/a"
		}
		ratio := fmt.Sprintf("%.3fx", r.Ratio)
		if r.Ratio == 0 {
			ratio = "-"
		}
		fmt.Fprintf(w, "%-32s %14s %14s %8s  %-18s %s", r.Name, fmt.Sprintf("%.3g %s", r.Native, r.Unit), g, ratio, r.Target, verdict)
		if r.Note != "" {
			fmt.Fprintf(w, " (%s)", r.Note)
		}
		fmt.Fprintln(w)
	}
}
