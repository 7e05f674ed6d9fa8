// Command membench measures the memory manager on a real GPU against native
// use of the same GPU, for issue 8's acceptance (bench/mem/run.sh runs it):
//
//	membench swap  four tenants whose data is twice --device-memory make
//	               checked passes over it; swap throughput against native
//	               pinned PCIe bandwidth
//	membench pipe  a two-stage pipeline handing a buffer from one tenant to
//	               another through a shared segment, against host round trips
//	membench copy  a pageable host-to-device copy through gpuos against the
//	               native pageable copy
//
// Each prints rows of a table (what, native or baseline, gpuos, ratio,
// target, verdict) and can append them as JSON lines to --json. The daemon
// must be running (gpuos serve); native measurements open the GPU directly.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	membench "github.com/gpuos/gpuos/bench/mem"
	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/auto"
	"github.com/gpuos/gpuos/internal/config"
	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "swap":
		err = swapCmd(ctx, os.Args[2:])
	case "pipe":
		err = pipeCmd(ctx, os.Args[2:])
	case "copy":
		err = copyCmd(ctx, os.Args[2:])
	case "table":
		err = tableCmd(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "membench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: membench swap|pipe|copy [flags] (-h for the flags of each), membench table RESULTS.jsonl")
	os.Exit(2)
}

// row is one line of the results table.
type row struct {
	What    string  `json:"what"`
	Base    float64 `json:"base"` // native, or the baseline the target compares with
	GPUOS   float64 `json:"gpuos"`
	Unit    string  `json:"unit"`
	Ratio   float64 `json:"ratio"`  // gpuos/base (or base/gpuos for times: bigger is better)
	Target  float64 `json:"target"` // ratio to reach; 0: none
	Verdict string  `json:"verdict"`
}

func (r *row) judge() {
	switch {
	case r.Target == 0:
		r.Verdict = "-"
	case r.Ratio >= r.Target:
		r.Verdict = "PASS"
	default:
		r.Verdict = "FAIL"
	}
}

type table struct {
	rows []row
	json string
}

func (t *table) add(r row) {
	r.judge()
	t.rows = append(t.rows, r)
	printRow(os.Stdout, r)
}

func printRow(w io.Writer, r row) {
	target := "-"
	if r.Target != 0 {
		target = fmt.Sprintf("%.2fx", r.Target)
	}
	fmt.Fprintf(w, "%-64s %10.3f %10.3f %-5s %8.3fx %7s  %s\n", r.What, r.Base, r.GPUOS, r.Unit, r.Ratio, target, r.Verdict)
}

// tableCmd prints the rows of a results file as one table.
func tableCmd(args []string) error {
	if len(args) != 1 {
		usage()
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Printf("%-64s %10s %10s %-5s %9s %7s  %s\n", "what", "base", "gpuos", "unit", "ratio", "target", "verdict")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		printRow(os.Stdout, r)
	}
	return sc.Err()
}

func (t *table) flush() error {
	if t.json == "" {
		return nil
	}
	f, err := os.OpenFile(t.json, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, r := range t.rows {
		b, _ := json.Marshal(r)
		fmt.Fprintf(f, "%s\n", b)
	}
	return nil
}

type common struct {
	socket  string
	backend string
	json    string
	timeout time.Duration
}

func (c *common) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.socket, "socket", "", "the daemon's socket (default: $XDG_RUNTIME_DIR/gpuos.sock)")
	fs.StringVar(&c.backend, "backend", "cuda", "backend for the native side: cuda, sim or auto")
	fs.StringVar(&c.json, "json", "", "append the rows as JSON lines to this file")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "give up after this long")
}

func size(fs *flag.FlagSet, name, def, usage string) *uint64 {
	v := new(uint64)
	n, _ := config.ParseSize(def)
	*v = uint64(n)
	fs.Func(name, usage+" (default "+def+")", func(s string) error {
		n, err := config.ParseSize(s)
		*v = uint64(n)
		return err
	})
	return v
}

func session(ctx context.Context, socket, token, label string) (*client.Client, *client.Session, error) {
	cl, err := client.Dial(ctx, client.Options{Socket: socket, Token: token, Program: "membench"})
	if err != nil {
		return nil, nil, err
	}
	s, err := cl.OpenSession(ctx, client.SessionOptions{Label: label})
	if err != nil {
		cl.Close()
		return nil, nil, err
	}
	return cl, s, nil
}

// ---- native measurements ----------------------------------------------------

// native is the GPU opened directly, with a device buffer and host buffers.
type native struct {
	dev      backend.Device
	st       backend.Stream
	ptr      backend.DevicePtr
	size     uint64
	chunk    backend.Chunk
	pinned   backend.HostMemory
	pageable []byte
}

func openNative(name string, n uint64) (*native, error) {
	choice, err := auto.Open(name, auto.Options{})
	if err != nil {
		return nil, err
	}
	dev, err := choice.Backend.Open(0)
	if err != nil {
		return nil, fmt.Errorf("open device 0 natively: %w", err)
	}
	nv := &native{dev: dev}
	fail := func(err error) (*native, error) {
		nv.close()
		return nil, err
	}
	gran := dev.Granularity()
	nv.size = (n + gran - 1) / gran * gran
	if nv.ptr, err = dev.Reserve(nv.size, gran); err != nil {
		return fail(err)
	}
	if nv.chunk, err = dev.CreateChunk(nv.size); err != nil {
		return fail(err)
	}
	if err = dev.Map(nv.ptr, nv.size, nv.chunk, 0); err != nil {
		return fail(err)
	}
	if err = dev.SetAccess(nv.ptr, nv.size); err != nil {
		return fail(err)
	}
	if nv.st, err = dev.NewStream(0); err != nil {
		return fail(err)
	}
	if nv.pinned, err = dev.AllocHost(int(n)); err != nil {
		return fail(err)
	}
	nv.pageable = make([]byte, n)
	for i := range nv.pageable {
		nv.pageable[i] = byte(i)
	}
	return nv, nil
}

func (nv *native) close() {
	if nv.st != nil {
		nv.st.Destroy()
	}
	if nv.pinned != nil {
		nv.pinned.Free()
	}
	if nv.chunk != nil {
		nv.dev.Unmap(nv.ptr, nv.size)
		nv.chunk.Release()
	}
	if nv.ptr != 0 {
		nv.dev.Release(nv.ptr, nv.size)
	}
	nv.dev.Close()
}

// bandwidth is the median GB/s of rounds copies of n bytes.
func (nv *native) bandwidth(n uint64, pinned, toDevice bool, rounds int) (float64, error) {
	host := nv.pageable[:n]
	if pinned {
		host = nv.pinned.Bytes()[:n]
	}
	var gbs []float64
	for i := 0; i < rounds+1; i++ {
		start := time.Now()
		var err error
		if toDevice {
			err = nv.st.CopyHtoD(nv.ptr, host)
		} else {
			err = nv.st.CopyDtoH(host, nv.ptr)
		}
		if err == nil {
			err = nv.st.Synchronize()
		}
		if err != nil {
			return 0, err
		}
		if i > 0 { // the first warms up
			gbs = append(gbs, float64(n)/time.Since(start).Seconds()/1e9)
		}
	}
	return median(gbs), nil
}

// pinRates measures pinning n bytes of host memory in three ways: AllocHost
// (cuMemHostAlloc) in pieces one after the other, the same pieces pinned by
// several goroutines at once (as the swap store pins), and anonymous memory
// faulted in by several threads, then registered in one call
// (cuMemHostRegister). It returns GB/s of each, allocation to pinned.
func (nv *native) pinRates(n, piece uint64, threads int) (alloc, parallel, register float64, err error) {
	var hms []backend.HostMemory
	freeAll := func() {
		for _, h := range hms {
			h.Free()
		}
		hms = nil
	}
	start := time.Now()
	for left := n; left > 0; left -= min(left, piece) {
		hm, err := nv.dev.AllocHost(int(min(left, piece)))
		if err != nil {
			freeAll()
			return 0, 0, 0, fmt.Errorf("pin host memory: %w", err)
		}
		hms = append(hms, hm)
	}
	alloc = float64(n) / time.Since(start).Seconds() / 1e9
	freeAll()

	start = time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	var perr error
	pieces := make(chan uint64, int(n/piece)+1)
	for left := n; left > 0; left -= min(left, piece) {
		pieces <- min(left, piece)
	}
	close(pieces)
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sz := range pieces {
				hm, err := nv.dev.AllocHost(int(sz))
				mu.Lock()
				if err != nil {
					perr = err
				} else {
					hms = append(hms, hm)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	parallel = float64(n) / time.Since(start).Seconds() / 1e9
	freeAll()
	if perr != nil {
		return alloc, 0, 0, fmt.Errorf("pin host memory on %d threads: %w", threads, perr)
	}

	start = time.Now()
	mem, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return alloc, parallel, 0, fmt.Errorf("map host memory: %w", err)
	}
	defer unix.Munmap(mem)
	workers := max(runtime.GOMAXPROCS(0), 1)
	per := (len(mem)/workers + 4095) &^ 4095
	for w := 0; w < workers; w++ {
		lo, hi := min(w*per, len(mem)), min((w+1)*per, len(mem))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i += 4096 {
				mem[i] = 1
			}
		}()
	}
	wg.Wait()
	if err := nv.dev.RegisterHost(mem); err != nil {
		return alloc, parallel, 0, fmt.Errorf("register host memory: %w", err)
	}
	register = float64(n) / time.Since(start).Seconds() / 1e9
	if err := nv.dev.UnregisterHost(mem); err != nil {
		return alloc, parallel, register, fmt.Errorf("unregister host memory: %w", err)
	}
	return alloc, parallel, register, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// ---- swap: acceptance (a) -------------------------------------------------------

func swapCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("membench swap", flag.ExitOnError)
	var c common
	c.flags(fs)
	tenants := fs.Int("tenants", 4, "tenants (each connects with the token --token-format names)")
	tokenFmt := fs.String("token-format", "token-%d", "token of tenant i")
	each := size(fs, "bytes", "8GiB", "data per tenant")
	buffer := size(fs, "buffer", "1GiB", "bytes per buffer")
	passes := fs.Int("passes", 4, "passes over the data per tenant")
	auditPath := fs.String("audit", "", "the daemon's audit log (to measure swapping)")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	t := &table{json: c.json}
	defer t.flush()

	// Native figures of this GPU and host, measured in this run: the pinned
	// copy bandwidth the swap copies compare with, and how fast host memory
	// can be pinned (what an eviction without buffers ready waits for).
	nv, err := openNative(c.backend, 256<<20)
	if err != nil {
		return err
	}
	var d2h, pinRate, parRate, regRate float64
	h2d, err := nv.bandwidth(256<<20, true, true, 5)
	if err == nil {
		d2h, err = nv.bandwidth(256<<20, true, false, 5)
		t.add(row{What: "native pinned HtoD / DtoH 256 MiB (GB/s)", Base: h2d, GPUOS: d2h, Unit: "GB/s", Ratio: d2h / h2d})
	}
	if err == nil {
		pinRate, parRate, regRate, err = nv.pinRates(1<<30, 64<<20, 4)
		t.add(row{What: "pinning 1GiB in 64MiB: cuMemHostAlloc, 1 thread / 4 (GB/s)", Base: pinRate,
			GPUOS: parRate, Unit: "GB/s", Ratio: parRate / pinRate})
		t.add(row{What: "pinning 1GiB: cuMemHostAlloc / mmap+cuMemHostRegister (GB/s)", Base: pinRate,
			GPUOS: regRate, Unit: "GB/s", Ratio: regRate / pinRate})
	}
	nv.close() // the GPU is the daemon's while the tenants run
	if err != nil {
		return err
	}

	start := time.Now()
	type result struct {
		res membench.PassesResult
		err error
	}
	results := make([]result, *tenants)
	var wg sync.WaitGroup
	for i := 0; i < *tenants; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := &results[i]
			cl, s, err := session(ctx, c.socket, fmt.Sprintf(*tokenFmt, i), fmt.Sprint("swap-", i))
			if err != nil {
				r.err = err
				return
			}
			defer cl.Close()
			defer s.Close()
			k, err := membench.Load(ctx, s)
			if err != nil {
				r.err = err
				return
			}
			r.res, r.err = membench.Passes(ctx, s, k, membench.PassesConfig{Bytes: *each, Buffer: *buffer, Passes: *passes,
				Seed: uint32(i) * 7919, Launch: client.LaunchConfig{Grid: client.Dim3{X: 1024}, Block: client.Dim3{X: 256}}})
		}(i)
	}
	wg.Wait()
	wall := time.Since(start)
	ok := 0
	for i, r := range results {
		if r.err != nil {
			fmt.Printf("tenant %d: FAILED: %v\n", i, r.err)
			continue
		}
		if r.res.Errors != 0 {
			fmt.Printf("tenant %d: FAILED: %d wrong elements\n", i, r.res.Errors)
			continue
		}
		ok++
		fmt.Printf("tenant %d: %d buffers, %d passes %v, verified %d bytes, total %v\n", i, r.res.Buffers, len(r.res.Passes),
			roundAll(r.res.Passes), r.res.Verified, r.res.Elapsed.Round(time.Millisecond))
	}
	t.add(row{What: fmt.Sprintf("tenants finished correct (of %d, %s each)", *tenants, sizeName(*each)), Base: float64(*tenants),
		GPUOS: float64(ok), Unit: "count", Ratio: float64(ok) / float64(*tenants), Target: 1})
	t.add(row{What: "wall time of the whole run (s)", GPUOS: wall.Seconds(), Unit: "s"})
	if *auditPath == "" {
		fmt.Println("no --audit: swap throughput not measured")
		return nil
	}
	sw, err := readSwapsSettled(*auditPath, start)
	if err != nil {
		return err
	}
	sw.report(t, d2h, h2d, pinRate)
	return nil
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

func sizeName(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.2fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0fMiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%dB", n)
}

// eviction is one mem.evict audit record.
type eviction struct {
	bytes, pinned uint64
	// device time of the copy; pinning first; waiting for the victims' work;
	// the sink mapped in its place; all of it
	copy, pin, quiesce, remap, ns time.Duration
}

// swaps is the memory manager's swapping during the run, from its audit records.
type swaps struct {
	evictions            []eviction
	passes               int
	inBytes, passEvicted uint64
	copyIn, passTime     time.Duration
	swapIns              int
	evictBytes           uint64
	// The swap reserve, pinned from the daemon's start (mem.swap-reserve;
	// the record may come before the run started).
	reserveBytes uint64
	reserveTime  time.Duration
}

// readSwapsSettled reads the audit log until two reads agree (the daemon
// writes it from a queue), for at most a few seconds.
func readSwapsSettled(path string, start time.Time) (swaps, error) {
	var last swaps
	for i := 0; i < 20; i++ {
		sw, err := readSwaps(path, start)
		if err != nil {
			return sw, err
		}
		if i > 0 && len(sw.evictions) == len(last.evictions) && sw.passes == last.passes && sw.swapIns == last.swapIns {
			return sw, nil
		}
		last = sw
		time.Sleep(250 * time.Millisecond)
	}
	return last, nil
}

// readSwaps collects the memory manager's audit records from start on: all
// the swapping of the run, the allocations' evictions included.
func readSwaps(path string, start time.Time) (swaps, error) {
	var sw swaps
	f, err := os.Open(path)
	if err != nil {
		return sw, err
	}
	defer f.Close()
	r := audit.NewReader(bufio.NewReaderSize(f, 1<<20))
	num := func(d map[string]any, k string) uint64 {
		v, _ := d[k].(float64)
		return uint64(v)
	}
	dur := func(d map[string]any, k string) time.Duration { return time.Duration(num(d, k)) }
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			continue
		}
		if e.Kind == "mem.swap-reserve" {
			sw.reserveBytes, sw.reserveTime = num(e.Detail, "bytes"), dur(e.Detail, "ns")
			continue
		}
		if e.Time.Before(start) || !strings.HasPrefix(string(e.Kind), "mem.") {
			continue
		}
		switch e.Kind {
		case "mem.evict":
			ev := eviction{bytes: num(e.Detail, "bytes"), pinned: num(e.Detail, "pinned"), copy: dur(e.Detail, "copy_ns"),
				pin: dur(e.Detail, "pin_ns"), quiesce: dur(e.Detail, "quiesce_ns"), remap: dur(e.Detail, "remap_ns"), ns: dur(e.Detail, "ns")}
			sw.evictions = append(sw.evictions, ev)
			sw.evictBytes += ev.bytes
		case "mem.swap-in":
			sw.swapIns++
		case "mem.resident":
			sw.passes++
			sw.inBytes += num(e.Detail, "bytes")
			sw.passEvicted += num(e.Detail, "evicted")
			sw.passTime += dur(e.Detail, "ns")
			sw.copyIn += dur(e.Detail, "copy_in_ns")
		}
	}
	return sw, nil
}

func gbps(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e9
}

// report adds the swapping rows, against the native pinned copies of this
// run: swap throughput as bytes moved (evicted and brought back) over the
// device time of their copies (the acceptance: at least 70% of pinned PCIe
// bandwidth); end to end, the same bytes over the time making sessions
// resident took, evictions, remapping and waiting included; evictions whose
// host buffers were pinned ahead, from the moment their victims' work had
// stopped to the end; where eviction time went; and the pinning still done.
func (sw swaps) report(t *table, d2h, h2d, pinRate float64) {
	var copyBytes, readyBytes, pinned uint64
	var copyTime, readyTime, pinTime, quiesce, remap, total time.Duration
	var rates []float64
	ready := 0
	for _, ev := range sw.evictions {
		if ev.copy > 0 {
			copyBytes += ev.bytes
			copyTime += ev.copy
			if ev.bytes >= 64<<20 { // per-eviction rates of small chunks are overhead
				rates = append(rates, gbps(ev.bytes, ev.copy))
			}
		}
		quiesce += ev.quiesce
		remap += ev.remap
		total += ev.ns
		if ev.pinned == 0 {
			ready++
			readyBytes += ev.bytes
			readyTime += ev.ns - min(ev.ns, ev.quiesce)
		} else {
			pinned += ev.pinned
			pinTime += ev.pin
		}
	}
	if sw.reserveBytes > 0 {
		fmt.Printf("swap reserve: %s pinned in %v from the daemon's start (%.2f GB/s)\n", sizeName(sw.reserveBytes),
			sw.reserveTime.Round(time.Millisecond), gbps(sw.reserveBytes, sw.reserveTime))
	}
	fmt.Printf("swapping: %d evictions %s (%d found host buffers pinned ahead, %d pinned %s first in %v; %v waiting for victims' work to stop), %d swap-ins, %d resident passes %s in (%s evicted for them) in %v\n",
		len(sw.evictions), sizeName(sw.evictBytes), ready, len(sw.evictions)-ready, sizeName(pinned), pinTime.Round(time.Millisecond),
		quiesce.Round(time.Millisecond), sw.swapIns, sw.passes, sizeName(sw.inBytes), sizeName(sw.passEvicted), sw.passTime.Round(time.Millisecond))
	if total > 0 {
		other := total - min(total, quiesce+pinTime+copyTime+remap)
		pct := func(d time.Duration) float64 { return 100 * d.Seconds() / total.Seconds() }
		// An eviction begun ahead copies while other work runs, so its time
		// counts only beginning and finishing it: the parts may add up to
		// more than the whole.
		fmt.Printf("eviction time %v (copies begun ahead overlap other work): quiesce %v (%.0f%%), pinning %v (%.0f%%), copy %v (%.0f%%), remap %v (%.0f%%), other %v (%.0f%%)\n",
			total.Round(time.Millisecond), quiesce.Round(time.Millisecond), pct(quiesce), pinTime.Round(time.Millisecond), pct(pinTime),
			copyTime.Round(time.Millisecond), pct(copyTime), remap.Round(time.Millisecond), pct(remap), other.Round(time.Millisecond), pct(other))
	}
	if len(rates) > 0 {
		sort.Float64s(rates)
		fmt.Printf("eviction copies of 64MiB or more, GB/s each: min %.1f median %.1f max %.1f (%d)\n",
			rates[0], rates[len(rates)/2], rates[len(rates)-1], len(rates))
	}
	if copyTime <= 0 && sw.copyIn <= 0 {
		fmt.Println("no swapping measured: the audit log has no timed evictions or swap-ins (is --device-memory below the tenants' data?)")
		return
	}
	pinnedBW := (d2h + h2d) / 2
	if copyTime > 0 && sw.copyIn > 0 {
		moved := gbps(copyBytes+sw.inBytes, copyTime+sw.copyIn)
		t.add(row{What: "swap throughput: bytes moved / copy time, vs pinned (GB/s)", Base: pinnedBW, GPUOS: moved, Unit: "GB/s",
			Ratio: moved / pinnedBW, Target: 0.7})
	}
	if copyTime > 0 {
		out := gbps(copyBytes, copyTime)
		t.add(row{What: "eviction copies, device to pinned host (GB/s)", Base: d2h, GPUOS: out, Unit: "GB/s", Ratio: out / d2h, Target: 0.7})
	}
	if sw.copyIn > 0 {
		in := gbps(sw.inBytes, sw.copyIn)
		t.add(row{What: "swap-in copies, pinned host to device (GB/s)", Base: h2d, GPUOS: in, Unit: "GB/s", Ratio: in / h2d, Target: 0.7})
	}
	if sw.passTime > 0 {
		moved := gbps(sw.inBytes+sw.passEvicted, sw.passTime)
		t.add(row{What: "swap end to end: resident passes, in + evicted (GB/s)", Base: pinnedBW, GPUOS: moved,
			Unit: "GB/s", Ratio: moved / pinnedBW, Target: 0.7})
	}
	if readyTime > 0 {
		e2e := gbps(readyBytes, readyTime)
		t.add(row{What: fmt.Sprintf("evictions after quiesce, buffers pinned (%d of %d) (GB/s)", ready, len(sw.evictions)),
			Base: d2h, GPUOS: e2e, Unit: "GB/s", Ratio: e2e / d2h})
	}
	if pinTime > 0 {
		pr := gbps(pinned, pinTime)
		t.add(row{What: fmt.Sprintf("evictions that pinned first (%d): pinning (GB/s)", len(sw.evictions)-ready),
			Base: pinRate, GPUOS: pr, Unit: "GB/s", Ratio: pr / pinRate})
	}
}

// ---- pipe: acceptance (b) ------------------------------------------------------

func pipeCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("membench pipe", flag.ExitOnError)
	var c common
	c.flags(fs)
	tokA := fs.String("token-a", "token-0", "token of the producing tenant")
	tokB := fs.String("token-b", "token-1", "token of the consuming tenant")
	tenantB := fs.String("tenant-b", "t1", "name of the consuming tenant (the producer lets it in)")
	n := size(fs, "bytes", "256MiB", "bytes handed over per stage")
	iters := fs.Int("iters", 20, "items through the pipeline per mode")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	t := &table{json: c.json}
	defer t.flush()
	cla, sa, err := session(ctx, c.socket, *tokA, "pipe-producer")
	if err != nil {
		return err
	}
	defer cla.Close()
	clb, sb, err := session(ctx, c.socket, *tokB, "pipe-consumer")
	if err != nil {
		return err
	}
	defer clb.Close()
	p, err := membench.NewPipeline(ctx, sa, sb, *tenantB, *n)
	if err != nil {
		return err
	}
	defer p.Close()
	shared, err := p.Run(ctx, membench.ThroughSegment, *iters)
	if err != nil {
		return fmt.Errorf("through a shared segment: %w", err)
	}
	host, err := p.Run(ctx, membench.ThroughHost, *iters)
	if err != nil {
		return fmt.Errorf("through host round trips: %w", err)
	}
	per := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(*iters) }
	t.add(row{What: fmt.Sprintf("pipeline %s/item: host round trip vs shared (ms)", sizeName(*n)), Base: per(host), GPUOS: per(shared),
		Unit: "ms", Ratio: host.Seconds() / shared.Seconds(), Target: 1.5})
	return nil
}

// ---- copy: acceptance (c) -------------------------------------------------------

func copyCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("membench copy", flag.ExitOnError)
	var c common
	c.flags(fs)
	token := fs.String("token", "", "token of the tenant")
	n := size(fs, "bytes", "256MiB", "bytes per copy")
	rounds := fs.Int("rounds", 5, "alternations of native and gpuos")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	t := &table{json: c.json}
	defer t.flush()
	nv, err := openNative(c.backend, *n)
	if err != nil {
		return err
	}
	defer nv.close()
	cl, s, err := session(ctx, c.socket, *token, "copy")
	if err != nil {
		return err
	}
	defer cl.Close()
	defer s.Close()
	buf, err := s.CreateBuffer(ctx, *n)
	if err != nil {
		return err
	}
	host := make([]byte, *n)
	for i := range host {
		host[i] = byte(i * 3)
	}
	var nat, via []float64
	for r := 0; r < *rounds+1; r++ {
		g, err := nv.bandwidth(*n, false, true, 1)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := s.CopyToDevice(buf.At(0), host, nil); err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		d := time.Since(start)
		if r > 0 {
			nat = append(nat, g)
			via = append(via, float64(*n)/d.Seconds()/1e9)
		}
	}
	check := make([]byte, 4096)
	if err := buf.Read(ctx, *n-4096, check); err != nil {
		return err
	}
	for i := range check {
		if check[i] != host[int(*n)-4096+i] {
			return fmt.Errorf("the copied data differs at byte %d", int(*n)-4096+i)
		}
	}
	gn, gg := median(nat), median(via)
	t.add(row{What: fmt.Sprintf("pageable HtoD %s: gpuos vs native (GB/s)", sizeName(*n)), Base: gn, GPUOS: gg, Unit: "GB/s",
		Ratio: gg / gn, Target: 1.5})
	return nil
}
