// Command schedbench is the gpuos side of the scheduling acceptance on a GPU
// (bench/sched/run.sh drives it; see bench/sched/README.md). Each run prints
// one JSON line, the same shape as bench/sched/native.cu prints for the
// native baseline, and "schedbench report DIR" turns a directory of them into
// the table.
//
//	schedbench hp     --token T --period 1ms --ns 20000      a high-priority service: one small kernel per period, waited for
//	schedbench be     --token T --blocks N --threads N --ns N a best-effort tenant saturating the GPU with long kernels
//	schedbench shares --tokens a,b --weights 1,3 ...         two tenants with short and long kernels, both saturating
//	schedbench report DIR                                    the table, with verdicts
//	schedbench stages [--label L --phase D --settle D] DIR   a traced service's time by stage (stages.go)
//	schedbench ratio [--pool] HP.json...                     an interleaved service's P99 ratio and its bootstrap range, per run or pooled (ratio.go)
//
// The kernel is spin(ns, done) of testdata/kernels/bench.ptx: every block
// spins on %globaltimer for ns nanoseconds. With --trace FILE, hp runs
// spin_stamp (stamp.ptx) instead, which also records when the GPU ran each
// request, and writes one CSV row per measured request (see writeTrace).
package main

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/wire"
	"golang.org/x/sys/unix"
)

// Result is one run's outcome; fields not measured by a mode are zero.
type Result struct {
	Mode  string `json:"mode"`  // hp, be, shares
	Stack string `json:"stack"` // gpuos or native
	Label string `json:"label,omitempty"`

	// hp
	Samples int     `json:"samples,omitempty"`
	P50us   float64 `json:"p50_us,omitempty"`
	P90us   float64 `json:"p90_us,omitempty"`
	P99us   float64 `json:"p99_us,omitempty"`
	MaxUs   float64 `json:"max_us,omitempty"`
	MeanUs  float64 `json:"mean_us,omitempty"`
	// Interleaved runs (--phase): the figures above are the loaded phases'
	// and Alone the alone phases' of the same run.
	PhaseMs float64 `json:"phase_ms,omitempty"`
	Alone   *Result `json:"alone,omitempty"`
	// PhasesUs are an interleaved run's latencies (µs) by phase, in order:
	// alone ones at even indices, loaded ones at odd; what report's
	// bootstrap interval of the P99 ratio resamples.
	PhasesUs [][]float64 `json:"phases_us,omitempty"`
	// Sync is how the service's synchronizes waited: in the driver, on its
	// completion page (asking for the words), or watching its launches
	// ($GPUOS_SYNC_CLIENT); watching, how many waited on the page alone and
	// how many asked the driver.
	Sync        string `json:"sync,omitempty"`
	SyncWatched uint64 `json:"sync_watched,omitempty"`
	SyncAsked   uint64 `json:"sync_asked,omitempty"`

	// be
	Kernels       int     `json:"kernels,omitempty"`
	KernelsPerSec float64 `json:"kernels_per_s,omitempty"`
	KernelUs      float64 `json:"kernel_us,omitempty"` // one kernel alone, measured with events
	// The daemon's dispatches of the tenant per kernel launched over the
	// run: 1 for kernels issued whole, more when they were sliced.
	DispatchesPerKernel float64 `json:"dispatches_per_kernel,omitempty"`

	// shares
	Tenants []ShareResult `json:"tenants,omitempty"`
}

// ShareResult is one tenant of a shares run.
type ShareResult struct {
	Tenant   string  `json:"tenant"`
	Weight   int     `json:"weight"`
	Kernels  int     `json:"kernels"`
	KernelUs float64 `json:"kernel_us"` // GPU time of one kernel alone, measured with events
	Share    float64 `json:"share"`     // of the GPU time both used in the window
	Target   float64 `json:"target"`
	Daemon   float64 `json:"daemon_share"` // the daemon's own accounting over the run
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: schedbench hp|be|shares|report|stages|ratio [flags] (see the package doc)")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch mode := os.Args[1]; mode {
	case "hp", "be", "shares":
		err = runMode(ctx, mode, os.Args[2:])
	case "stages":
		err = runStages(os.Args[2:], os.Stdout)
	case "ratio":
		err = runRatio(os.Args[2:], os.Stdout)
	case "report":
		if len(os.Args) != 3 {
			err = errors.New("usage: schedbench report DIR")
		} else {
			err = report(os.Args[2], os.Stdout)
		}
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedbench:", err)
		os.Exit(1)
	}
}

type options struct {
	socket, ptxPath, token, tokens, weights, label string
	trace                                          string // hp: per-request CSV
	duration, warmup, period, think                time.Duration
	phase, settle                                  time.Duration // interleaved runs
	from                                           time.Time     // when measuring starts
	ns, nsShort, nsLong                            uint64
	blocks, threads, depth                         int
}

func runMode(ctx context.Context, mode string, args []string) error {
	var o options
	fs := flag.NewFlagSet("schedbench "+mode, flag.ExitOnError)
	fs.StringVar(&o.socket, "socket", os.Getenv("GPUOS_SOCKET"), "the daemon's socket")
	fs.StringVar(&o.ptxPath, "ptx", "testdata/kernels/bench.ptx", "PTX holding spin(ns, done)")
	fs.StringVar(&o.token, "token", os.Getenv("GPUOS_TOKEN"), "tenant token (hp, be)")
	fs.StringVar(&o.tokens, "tokens", "a,b", "tenant tokens (shares): the first gets short kernels, the second long ones")
	fs.StringVar(&o.weights, "weights", "1,3", "the tenants' configured weights (shares), for the target")
	fs.StringVar(&o.label, "label", "", "a label copied into the result")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long to measure")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "how long to run before measuring")
	startAt := fs.Float64("start-at", 0, "measure from this wall-clock time (unix seconds) instead of after --warmup, so that processes measure the same window")
	fs.DurationVar(&o.period, "period", time.Millisecond, "hp: one kernel per period")
	fs.DurationVar(&o.think, "think", 0, "hp: work on the CPU this long between each launch and its synchronize (a service preparing its next input)")
	fs.StringVar(&o.trace, "trace", "", "hp: write each measured request's host and GPU times (CSV) to this file")
	fs.DurationVar(&o.phase, "phase", 0, "hp, be: an interleaved run: the measured window alternates phases this long, alone first, then loaded (be saturates only in loaded phases; hp reports both)")
	fs.DurationVar(&o.settle, "settle", 25*time.Millisecond, "hp with --phase: requests this soon after a loaded phase ends count in neither (the load drains)")
	fs.Uint64Var(&o.ns, "ns", 20000, "hp, be: each block spins this many ns")
	fs.Uint64Var(&o.nsShort, "ns-short", 200000, "shares: the first tenant's kernels (ns per block)")
	fs.Uint64Var(&o.nsLong, "ns-long", 2000000, "shares: the second tenant's kernels (ns per block)")
	fs.IntVar(&o.blocks, "blocks", 1, "blocks per kernel (hp: 1; be: many waves; shares: enough to fill the GPU)")
	fs.IntVar(&o.threads, "threads", 32, "threads per block")
	fs.IntVar(&o.depth, "depth", 4, "be, shares: kernels per batch; a batch is always queued behind the one running")
	fs.Parse(args)
	if o.phase < 0 || o.settle < 0 || (o.phase > 0 && o.settle >= o.phase) {
		return fmt.Errorf("--phase %v, --settle %v: want 0 <= settle < phase", o.phase, o.settle)
	}
	o.from = time.Now().Add(o.warmup)
	if *startAt > 0 {
		o.from = time.Unix(0, int64(*startAt*1e9))
	}
	image, err := os.ReadFile(o.ptxPath)
	if err != nil {
		return err
	}
	var r *Result
	switch mode {
	case "hp":
		r, err = runHP(ctx, o, image)
	case "be":
		r, err = runBE(ctx, o, image)
	case "shares":
		r, err = runShares(ctx, o, image)
	}
	if err != nil {
		return err
	}
	r.Mode, r.Stack, r.Label = mode, "gpuos", o.label
	if r.Alone != nil {
		r.Alone.Mode, r.Alone.Stack, r.Alone.Label = mode, "gpuos", o.label+" (alone phases)"
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// tenant is one session running the spin kernel.
type tenant struct {
	c    *client.Client
	s    *client.Session
	k    *client.Kernel
	done *client.Buffer
	st   *client.Stream
}

func open(ctx context.Context, o options, token, label string, image []byte) (*tenant, error) {
	c, err := client.Dial(ctx, client.Options{Socket: o.socket, Token: token, Program: "schedbench"})
	if err != nil {
		return nil, err
	}
	s, err := c.OpenSession(ctx, client.SessionOptions{Label: label})
	if err != nil {
		return nil, err
	}
	p, err := s.LoadProgram(ctx, image, "bench.ptx")
	if err != nil {
		return nil, err
	}
	k, err := p.Kernel(ctx, "spin")
	if err != nil {
		return nil, err
	}
	done, err := s.CreateBuffer(ctx, 4096)
	if err != nil {
		return nil, err
	}
	st, err := s.CreateStream(ctx, 0)
	if err != nil {
		return nil, err
	}
	return &tenant{c: c, s: s, k: k, done: done, st: st}, nil
}

func (t *tenant) launch(blocks, threads int, ns uint64) error {
	return t.s.Launch(t.k, client.LaunchConfig{Grid: client.Dim3{X: uint32(blocks)}, Block: client.Dim3{X: uint32(threads)}, Stream: t.st},
		ns, t.done)
}

// timeOne measures one kernel's GPU time alone, as it occupies the device
// when kernels run back to back (as in the saturating tests): a burst of
// timeBurst kernels between two events, divided by timeBurst, the least of
// three. One kernel between two events also counts its launch's start-up
// on the device (about 30 µs on the H100, 15% of a 200 µs kernel, and
// varying from run to run by as much), which back-to-back kernels hide.
func (t *tenant) timeOne(ctx context.Context, blocks, threads int, ns uint64) (time.Duration, error) {
	const timeBurst = 8
	best := time.Duration(1 << 62)
	for range 3 {
		a, err := t.s.Record(ctx, t.st)
		if err != nil {
			return 0, err
		}
		for range timeBurst {
			if err := t.launch(blocks, threads, ns); err != nil {
				return 0, err
			}
		}
		b, err := t.s.Record(ctx, t.st)
		if err != nil {
			return 0, err
		}
		if err := b.Wait(ctx, 0); err != nil {
			return 0, err
		}
		d, err := client.Elapsed(ctx, a, b)
		if err != nil {
			return 0, err
		}
		best = min(best, d/timeBurst)
		a.Close()
		b.Close()
	}
	return best, nil
}

func runHP(ctx context.Context, o options, image []byte) (*Result, error) {
	t, err := open(ctx, o, o.token, "hp", image)
	if err != nil {
		return nil, err
	}
	var tr *hpTrace
	if o.trace != "" {
		if tr, err = newHPTrace(ctx, t, o); err != nil {
			return nil, err
		}
	}
	var lat, alone []time.Duration
	var phases [][]float64 // interleaved: latencies by phase
	next := time.Now()
	for end := o.from.Add(o.duration); time.Now().Before(end); {
		if d := time.Until(next); d > 0 {
			sleepThread(d)
		}
		next = next.Add(o.period)
		t0 := time.Now()
		measured := !t0.Before(o.from)
		if tr != nil && measured && tr.room() {
			err = tr.launch(t, o, t0)
		} else {
			err = t.launch(o.blocks, o.threads, o.ns)
		}
		if err != nil {
			return nil, err
		}
		for o.think > 0 && time.Since(t0) < o.think {
		}
		if tr != nil && measured {
			tr.syncing(time.Now())
		}
		if err := t.st.Synchronize(ctx); err != nil {
			return nil, err
		}
		d := time.Since(t0)
		if measured {
			loaded, counted := o.phaseAt(t0)
			switch {
			case !counted:
			case loaded:
				lat = append(lat, d)
			default:
				alone = append(alone, d)
			}
			if counted && o.phase > 0 {
				k := int(t0.Sub(o.from) / o.phase)
				for len(phases) <= k {
					phases = append(phases, nil)
				}
				phases[k] = append(phases[k], float64(d.Nanoseconds())/1e3)
			}
		}
		if tr != nil && measured {
			tr.synced(t0.Add(d))
		}
	}
	if tr != nil {
		if err := tr.write(ctx, o.trace); err != nil {
			return nil, err
		}
	}
	r := latencyResult(lat)
	if o.phase > 0 {
		r.PhaseMs, r.Alone, r.PhasesUs = float64(o.phase.Microseconds())/1e3, latencyResult(alone), phases
	}
	switch {
	case t.s.WatchesLaunches():
		r.Sync = "watch"
		r.SyncWatched, r.SyncAsked = t.s.WatchCounts()
	case t.s.ClientCompletion():
		r.Sync = "page"
	default:
		r.Sync = "driver"
	}
	return r, nil
}

// phaseAt places a measured instant in an interleaved run (--phase): the
// window from o.from alternates phases of o.phase, alone (even) and loaded
// (odd). A request counts in the loaded phase it starts in, all of it
// (the load's ramp-up included); in an alone phase, once o.settle has passed
// (what the load left queued has drained by then). Without phases every
// request counts as loaded: the process runs one scenario.
func (o options) phaseAt(t time.Time) (loaded, counted bool) {
	if o.phase <= 0 {
		return true, true
	}
	since := t.Sub(o.from)
	k := since / o.phase
	if k%2 == 1 {
		return true, true
	}
	return false, since-k*o.phase >= o.settle
}

//go:embed stamp.ptx
var stampPTX []byte

// traceMax bounds a trace's requests (16 bytes of GPU stamps each).
const traceMax = 1 << 16

// hpTrace records, per measured request, when the client launched it, called
// its synchronize and saw it return (wall clock), and when the GPU started
// and ended it (%globaltimer, read back at the end).
type hpTrace struct {
	k      *client.Kernel
	stamps *client.Buffer
	host   [][3]time.Time // launch, synchronize returned, synchronize called
}

func newHPTrace(ctx context.Context, t *tenant, o options) (*hpTrace, error) {
	p, err := t.s.LoadProgram(ctx, stampPTX, "stamp.ptx")
	if err != nil {
		return nil, err
	}
	k, err := p.Kernel(ctx, "spin_stamp")
	if err != nil {
		return nil, err
	}
	n := min(int(o.duration/max(o.period, time.Microsecond))+1024, traceMax)
	b, err := t.s.CreateBuffer(ctx, uint64(16*n))
	if err != nil {
		return nil, err
	}
	if err := b.Write(ctx, 0, make([]byte, 16*n)); err != nil {
		return nil, err
	}
	return &hpTrace{k: k, stamps: b, host: make([][3]time.Time, 0, n)}, nil
}

func (tr *hpTrace) room() bool { return len(tr.host) < cap(tr.host) }

func (tr *hpTrace) launch(t *tenant, o options, t0 time.Time) error {
	i := uint64(len(tr.host))
	tr.host = append(tr.host, [3]time.Time{t0})
	return t.s.Launch(tr.k, client.LaunchConfig{Grid: client.Dim3{X: uint32(o.blocks)}, Block: client.Dim3{X: uint32(o.threads)}, Stream: t.st},
		o.ns, tr.stamps.Addr()+16*i)
}

func (tr *hpTrace) syncing(at time.Time) {
	if n := len(tr.host); n > 0 && tr.host[n-1][2].IsZero() {
		tr.host[n-1][2] = at
	}
}

func (tr *hpTrace) synced(at time.Time) {
	if n := len(tr.host); n > 0 && tr.host[n-1][1].IsZero() {
		tr.host[n-1][1] = at
	}
}

// write reads the GPU stamps back and writes one row per request: the
// client's launch and synchronize-returned times (Unix ns), the GPU's
// start and end (%globaltimer ns, whose origin need not be the host's: a
// reader aligns the two by the least start - launch), and when the client
// called its synchronize (Unix ns).
func (tr *hpTrace) write(ctx context.Context, path string) error {
	raw := make([]byte, 16*len(tr.host))
	if err := tr.stamps.Read(ctx, 0, raw); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "launch_ns,synced_ns,gpu_start_ns,gpu_end_ns,sync_called_ns")
	for i, h := range tr.host {
		fmt.Fprintf(w, "%d,%d,%d,%d,%d\n", h[0].UnixNano(), h[1].UnixNano(),
			binary.LittleEndian.Uint64(raw[16*i:]), binary.LittleEndian.Uint64(raw[16*i+8:]), h[2].UnixNano())
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func latencyResult(lat []time.Duration) *Result {
	r := &Result{Samples: len(lat)}
	if len(lat) == 0 {
		return r
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	r.P50us, r.P90us, r.P99us, r.MaxUs = us(lat[len(lat)/2]), us(lat[len(lat)*90/100]), us(lat[len(lat)*99/100]), us(lat[len(lat)-1])
	r.MeanUs = us(sum / time.Duration(len(lat)))
	return r
}

func runBE(ctx context.Context, o options, image []byte) (*Result, error) {
	t, err := open(ctx, o, o.token, "be", image)
	if err != nil {
		return nil, err
	}
	one, err := t.timeOne(ctx, o.blocks, o.threads, o.ns)
	if err != nil {
		return nil, err
	}
	before, serr := daemonStats(ctx, o, o.token)
	var n, launched int
	var elapsed time.Duration
	if o.phase > 0 {
		n, elapsed, launched, err = alternate(ctx, t, o)
	} else {
		n, elapsed, launched, err = saturate(ctx, t, o.blocks, o.threads, o.ns, o.depth, o.from, o.duration)
	}
	if err != nil {
		return nil, err
	}
	r := &Result{Kernels: n, KernelsPerSec: float64(n) / elapsed.Seconds(), KernelUs: float64(one.Nanoseconds()) / 1e3}
	if o.phase > 0 {
		r.PhaseMs = float64(o.phase.Microseconds()) / 1e3
	}
	// Tenant names are the tokens in sched.yaml.
	if after, err := daemonStats(ctx, o, o.token); err == nil && serr == nil && launched > 0 {
		r.DispatchesPerKernel = float64(after[o.token].Dispatched-before[o.token].Dispatched) / float64(launched)
	}
	return r, nil
}

// saturate keeps the tenant's queue full — batches of depth kernels, each
// followed by a fence, the next batch launched before waiting for the
// previous one's fence — and counts the kernels whose batch completed in
// [from, from+duration): the first batch ending after from starts the count,
// the first ending after from+duration stops it. It returns once every
// kernel it launched (launched, warm-up included) has completed.
func saturate(ctx context.Context, t *tenant, blocks, threads int, ns uint64, depth int, from time.Time, duration time.Duration) (n int, elapsed time.Duration, launched int, err error) {
	var measured time.Time
	var pending []*client.Fence
	defer func() {
		for _, f := range pending {
			f.Wait(ctx, 0)
			f.Close()
		}
	}()
	for {
		for range depth {
			if err := t.launch(blocks, threads, ns); err != nil {
				return 0, 0, launched, err
			}
			launched++
		}
		f, err := t.s.Record(ctx, t.st)
		if err != nil {
			return 0, 0, launched, err
		}
		pending = append(pending, f)
		if len(pending) < 2 {
			continue
		}
		if err := pending[0].Wait(ctx, 0); err != nil {
			return 0, 0, launched, err
		}
		pending[0].Close()
		pending = pending[1:]
		now := time.Now()
		switch {
		case now.Before(from):
		case measured.IsZero():
			measured = now
		default:
			n += depth
		}
		if !measured.IsZero() && now.Sub(measured) >= duration {
			return n, now.Sub(measured), launched, nil
		}
	}
}

// alternate is saturate for an interleaved run: the tenant idles through
// the alone phases and saturates through the loaded ones (see phaseAt),
// stopping its launches at each loaded phase's end and waiting for what it
// launched. It counts the kernels whose batch completed inside a loaded
// phase, over the loaded phases' time.
func alternate(ctx context.Context, t *tenant, o options) (n int, loadedTime time.Duration, launched int, err error) {
	end := o.from.Add(o.duration)
	for k := 1; ; k += 2 {
		start := o.from.Add(time.Duration(k) * o.phase)
		if !start.Before(end) {
			return n, loadedTime, launched, nil
		}
		stop := start.Add(o.phase)
		if stop.After(end) {
			stop = end
		}
		time.Sleep(time.Until(start))
		c, l, err := saturateUntil(ctx, t, o.blocks, o.threads, o.ns, o.depth, stop)
		n, launched = n+c, launched+l
		if err != nil {
			return n, loadedTime, launched, err
		}
		loadedTime += stop.Sub(start)
	}
}

// saturateUntil keeps the tenant's queue full as saturate does, launching no
// batch after stop, and returns once everything it launched has completed,
// with the kernels of the batches that completed before stop.
func saturateUntil(ctx context.Context, t *tenant, blocks, threads int, ns uint64, depth int, stop time.Time) (n, launched int, err error) {
	var pending []*client.Fence
	wait := func() error {
		f := pending[0]
		pending = pending[1:]
		defer f.Close()
		if err := f.Wait(ctx, 0); err != nil {
			return err
		}
		if time.Now().Before(stop) {
			n += depth
		}
		return nil
	}
	defer func() {
		for len(pending) > 0 {
			if werr := wait(); err == nil {
				err = werr
			}
		}
	}()
	for time.Now().Before(stop) {
		for range depth {
			if err := t.launch(blocks, threads, ns); err != nil {
				return n, launched, err
			}
			launched++
		}
		f, err := t.s.Record(ctx, t.st)
		if err != nil {
			return n, launched, err
		}
		pending = append(pending, f)
		if len(pending) < 2 {
			continue
		}
		if err := wait(); err != nil {
			return n, launched, err
		}
	}
	return n, launched, nil
}

func runShares(ctx context.Context, o options, image []byte) (*Result, error) {
	tokens := strings.Split(o.tokens, ",")
	var weights []int
	for _, w := range strings.Split(o.weights, ",") {
		var n int
		fmt.Sscan(w, &n)
		weights = append(weights, max(n, 1))
	}
	if len(tokens) != 2 || len(weights) != 2 {
		return nil, errors.New("shares: --tokens and --weights name two tenants")
	}
	nss := []uint64{o.nsShort, o.nsLong}
	ts := make([]*tenant, 2)
	r := &Result{Tenants: make([]ShareResult, 2)}
	for i := range ts {
		t, err := open(ctx, o, tokens[i], "shares", image)
		if err != nil {
			return nil, err
		}
		ts[i] = t
		one, err := t.timeOne(ctx, o.blocks, o.threads, nss[i])
		if err != nil {
			return nil, err
		}
		r.Tenants[i] = ShareResult{Tenant: tokens[i], Weight: weights[i], KernelUs: float64(one.Nanoseconds()) / 1e3,
			Target: float64(weights[i]) / float64(weights[0]+weights[1])}
	}
	before, derr := daemonUsage(ctx, o, tokens)
	type out struct {
		i, n int
		err  error
	}
	res := make(chan out, 2)
	for i, t := range ts {
		go func() {
			n, _, _, err := saturate(ctx, t, o.blocks, o.threads, nss[i], o.depth, o.from, o.duration)
			res <- out{i, n, err}
		}()
	}
	for range ts {
		x := <-res
		if x.err != nil {
			return nil, x.err
		}
		r.Tenants[x.i].Kernels = x.n
	}
	var total float64
	for _, t := range r.Tenants {
		total += float64(t.Kernels) * t.KernelUs
	}
	for i := range r.Tenants {
		if total > 0 {
			r.Tenants[i].Share = float64(r.Tenants[i].Kernels) * r.Tenants[i].KernelUs / total
		}
	}
	// The daemon's view: GPU time charged to each tenant during the run
	// (warmup and ramp included). Tenant names are the tokens in sched.yaml.
	if after, err := daemonUsage(ctx, o, tokens); err == nil && derr == nil {
		var sum float64
		used := make([]float64, 2)
		for i, tok := range tokens {
			used[i] = float64(after[tok] - before[tok])
			sum += used[i]
		}
		for i := range used {
			if sum > 0 {
				r.Tenants[i].Daemon = used[i] / sum
			}
		}
	}
	return r, nil
}

// daemonUsage reads each tenant's GPU time from the daemon (gpuos's own
// accounting, for comparison).
func daemonUsage(ctx context.Context, o options, tokens []string) (map[string]uint64, error) {
	ts, err := daemonStats(ctx, o, tokens[0])
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for name, t := range ts {
		out[name] = t.GPUTimeNs
	}
	return out, nil
}

// daemonStats reads every tenant's scheduling statistics from the daemon,
// by tenant name (summed over devices).
func daemonStats(ctx context.Context, o options, token string) (map[string]v1.TenantStat, error) {
	conn, err := wire.Dial(ctx, o.socket)
	if err != nil {
		return nil, err
	}
	mgr := wire.NewClient(conn)
	defer mgr.Close()
	if err := mgr.Call(ctx, v1.NewHello(v1.RoleClient, token, "schedbench"), nil); err != nil {
		return nil, err
	}
	var ts v1.Tenants
	if err := mgr.Call(ctx, &v1.TenantStats{}, &ts); err != nil {
		return nil, err
	}
	out := map[string]v1.TenantStat{}
	for _, t := range ts.Tenants {
		x := out[t.Name]
		x.Name = t.Name
		x.GPUTimeNs += t.GPUTimeNs
		x.Dispatched += t.Dispatched
		out[t.Name] = x
	}
	return out, nil
}

// sleepThread sleeps the calling thread in nanosleep, as the native baseline
// (native.cu) does between requests. A Go timer would wake the goroutine
// through the runtime, which then wakes a second thread to look for work: an
// interrupt to another CPU per request (bench/RESULTS.md, session 11) that a
// C client of gpuos, or the baseline, does not cause.
func sleepThread(d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for unix.Nanosleep(&ts, &ts) == unix.EINTR { // a signal (the runtime's preemption): sleep the rest
	}
}
