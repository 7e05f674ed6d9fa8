package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Acceptance targets (issue 6).
const (
	maxShareError   = 0.03 // |share - target|, per tenant
	maxP99Ratio     = 1.2  // high-priority P99 with contention / alone, through gpuos
	minBEThroughput = 0.70 // best-effort throughput with the service / alone, through gpuos
)

// load reads the last JSON line of DIR/name.json, or nil if there is none.
func load(dir, name string) *Result {
	f, err := os.Open(filepath.Join(dir, name+".json"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var r *Result
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 256<<20) // an interleaved run's line holds every latency (PhasesUs)
	for sc.Scan() {
		var x Result
		if json.Unmarshal(sc.Bytes(), &x) == nil && x.Mode != "" {
			r = &x
		}
	}
	return r
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// report prints the acceptance table from the results run.sh left in dir.
func report(dir string, w io.Writer) error {
	fmt.Fprintf(w, "gpuos scheduling acceptance — results in %s\n\n", dir)
	fails := 0

	fmt.Fprintln(w, "(a) two tenants weighted 1:3, short kernels (first) vs long kernels (second), both saturating;")
	fmt.Fprintln(w, "    share = kernels completed x one kernel's GPU time (alone, back to back, timed with events), over both tenants")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\ttenant\tweight\tkernel us\tkernels\tshare\ttarget\terror\tdaemon's view\tverdict (<= 3%)\t")
	for _, pol := range []string{"fair", "band"} {
		r := load(dir, "gpuos-shares-"+pol)
		if r == nil || len(r.Tenants) != 2 {
			fmt.Fprintf(tw, "%s\t(not run)\t\t\t\t\t\t\t\t\t\n", pol)
			fails++
			continue
		}
		for _, t := range r.Tenants {
			e := math.Abs(t.Share - t.Target)
			ok := e <= maxShareError
			if !ok {
				fails++
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%d\t%.2f%%\t%.2f%%\t%.2f%%\t%.2f%%\t%s\t\n", pol, t.Tenant, t.Weight, t.KernelUs, t.Kernels,
				100*t.Share, 100*t.Target, 100*e, 100*t.Daemon, verdict(ok))
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "    (Gdev's BAND kept two virtual GPUs within 7% of their shares.)")
	fmt.Fprintln(w)

	fmt.Fprintln(w, "(b) a high-priority service (small kernel at a fixed rate, each waited for) while two best-effort")
	fmt.Fprintln(w, "    tenants saturate the GPU with long kernels; latency = launch to synchronize returning")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stack\tscenario\tsamples\tP50 us\tP90 us\tP99 us\tmax us\tbest-effort kernels/s\t")
	type row struct{ hp, be1, be2 *Result }
	get := func(stack, scen string) row {
		return row{load(dir, stack+"-hp-"+scen), load(dir, stack+"-be-"+scen+"-1"), load(dir, stack+"-be-"+scen+"-2")}
	}
	beRate := func(r row) float64 {
		var s float64
		for _, b := range []*Result{r.be1, r.be2} {
			if b != nil {
				s += b.KernelsPerSec
			}
		}
		return s
	}
	rows := map[string]row{}
	for _, stack := range []string{"native", "gpuos"} {
		for _, scen := range []string{"alone", "mixed"} {
			r := get(stack, scen)
			rows[stack+"-"+scen] = r
			hp := "\t(not run)\t\t\t\t"
			if r.hp != nil {
				hp = fmt.Sprintf("\t%d\t%.1f\t%.1f\t%.1f\t%.1f", r.hp.Samples, r.hp.P50us, r.hp.P90us, r.hp.P99us, r.hp.MaxUs)
			}
			be := "-"
			if r.be1 != nil || r.be2 != nil {
				be = fmt.Sprintf("%.1f", beRate(r))
			}
			what := map[string]string{"alone": "each alone", "mixed": "all three at once"}[scen]
			fmt.Fprintf(tw, "%s\t%s%s\t%s\t\n", stack, what, hp, be)
		}
	}
	// The interleaved scenario (PHASE): one window, the load idle and
	// saturating by turns; the service's alone and loaded phases side by side.
	interleaved := map[string]row{}
	for _, stack := range []string{"native", "gpuos"} {
		r := get(stack, "interleaved")
		if r.hp == nil || r.hp.Alone == nil {
			continue
		}
		interleaved[stack] = r
		be := "-"
		if r.be1 != nil || r.be2 != nil {
			be = fmt.Sprintf("%.1f", beRate(r))
		}
		for _, x := range []struct {
			what string
			hp   *Result
			be   string
		}{{"interleaved, alone phases", r.hp.Alone, "-"}, {"interleaved, loaded phases", r.hp, be}} {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t\n", stack, x.what, x.hp.Samples, x.hp.P50us, x.hp.P90us, x.hp.P99us, x.hp.MaxUs, x.be)
		}
	}
	// Diagnostics (DIAG=1): the service again with the daemon's and the
	// client's rings polling through the whole period (GPUOS_RING_SPIN), so
	// that no thread sleeps between requests; not a verdict.
	for _, scen := range []string{"alone", "mixed"} {
		if r := load(dir, "gpuos-hp-"+scen+"-spin"); r != nil {
			what := map[string]string{"alone": "alone, rings polling", "mixed": "all three, rings polling"}[scen]
			fmt.Fprintf(tw, "gpuos\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t-\t\n", what, r.Samples, r.P50us, r.P90us, r.P99us, r.MaxUs)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	ga, gm := rows["gpuos-alone"], rows["gpuos-mixed"]
	na, nm := rows["native-alone"], rows["native-mixed"]
	// The P99 verdict: from the interleaved scenario when it ran, whose
	// alone and loaded phases share one window and so the host's hiccups
	// over time; the separate windows' ratio is printed beside it, and is
	// the verdict when the interleaved scenario did not run.
	gi := interleaved["gpuos"]
	sequential := ga.hp != nil && gm.hp != nil && ga.hp.P99us > 0
	switch {
	case gi.hp != nil && gi.hp.Alone.P99us > 0 && gi.hp.Samples > 0:
		x := gi.hp.P99us / gi.hp.Alone.P99us
		ok := x <= maxP99Ratio
		if !ok {
			fails++
		}
		fmt.Fprintf(w, "gpuos: high-priority P99 in the loaded phases / in the alone phases = %.2f (interleaved, %.0f ms phases; target <= %.1f)  %s\n",
			x, gi.hp.PhaseMs, maxP99Ratio, verdict(ok))
		if lo, hi, pairs, ok := ratioInterval(gi.hp.PhasesUs); ok {
			fmt.Fprintf(w, "gpuos: the same ratio with the run's %d pairs of phases resampled (bootstrap, %d draws): 95%% of draws within %.2f-%.2f\n",
				pairs, bootstrapDraws, lo, hi)
		}
		printControl(w, "gpuos", gi.hp.PhasesUs)
		if sequential {
			fmt.Fprintf(w, "gpuos: high-priority P99 with the best-effort load / alone, separate windows = %.2f\n", gm.hp.P99us/ga.hp.P99us)
		}
	case sequential:
		x := gm.hp.P99us / ga.hp.P99us
		ok := x <= maxP99Ratio
		if !ok {
			fails++
		}
		fmt.Fprintf(w, "gpuos: high-priority P99 with the best-effort load / alone = %.2f (target <= %.1f)  %s\n", x, maxP99Ratio, verdict(ok))
	default:
		fails++
		fmt.Fprintln(w, "gpuos: high-priority P99 ratio: missing results  FAIL")
	}
	// With SMs reserved for the service (RESERVE), the best-effort tenants
	// alone were also run on a daemon without the reserve: the verdict takes
	// that stricter baseline, the whole GPU's throughput, when it is there.
	whole := row{be1: load(dir, "gpuos-be-whole-1"), be2: load(dir, "gpuos-be-whole-2")}
	if a, m := beRate(ga), beRate(gm); a > 0 && m > 0 {
		base, what := a, "alone"
		if wa := beRate(whole); wa > 0 {
			fmt.Fprintf(w, "gpuos: best-effort throughput with the service / alone with the same SMs reserved = %.2f\n", m/a)
			fmt.Fprintf(w, "gpuos: best-effort throughput alone with SMs reserved / alone on the whole GPU = %.2f (%.1f vs %.1f kernels/s)\n", a/wa, a, wa)
			base, what = wa, "alone on the whole GPU"
		}
		x := m / base
		ok := x >= minBEThroughput
		if !ok {
			fails++
		}
		fmt.Fprintf(w, "gpuos: best-effort throughput with the service / %s = %.2f (target >= %.2f)  %s\n", what, x, minBEThroughput, verdict(ok))
	} else {
		fails++
		fmt.Fprintln(w, "gpuos: best-effort throughput ratio: missing results  FAIL")
	}
	dispatches := func(r row) float64 {
		var sum float64
		var n int
		for _, b := range []*Result{r.be1, r.be2} {
			if b != nil && b.DispatchesPerKernel > 0 {
				sum += b.DispatchesPerKernel
				n++
			}
		}
		if n == 0 {
			return 0
		}
		return sum / float64(n)
	}
	if a, m := dispatches(ga), dispatches(gm); a > 0 || m > 0 {
		why := "its kernels issued whole: the service has SMs of its own"
		if m > 1.5 {
			why = "its kernels sliced while the service is active"
		}
		fmt.Fprintf(w, "gpuos: best-effort dispatches per kernel alone %.1f, with the service %.1f (%s)\n", a, m, why)
	}
	if na.hp != nil && nm.hp != nil && na.hp.P99us > 0 {
		fmt.Fprintf(w, "native baseline: high-priority P99 with the best-effort load / alone = %.2f (three processes, time-sliced contexts)\n", nm.hp.P99us/na.hp.P99us)
		if gm.hp != nil && gm.hp.P99us > 0 {
			fmt.Fprintf(w, "native P99 under load / gpuos P99 under load = %.2f\n", nm.hp.P99us/gm.hp.P99us)
		}
	}
	if ni := interleaved["native"]; ni.hp != nil && ni.hp.Alone.P99us > 0 {
		fmt.Fprintf(w, "native baseline, interleaved: high-priority P99 in the loaded phases / in the alone phases = %.2f\n", ni.hp.P99us/ni.hp.Alone.P99us)
		printControl(w, "native", ni.hp.PhasesUs)
	}
	if a, m := beRate(na), beRate(nm); a > 0 && m > 0 {
		fmt.Fprintf(w, "native baseline: best-effort throughput with the service / alone = %.2f\n", m/a)
	}
	for _, stack := range []string{"gpuos", "native"} {
		if r := interleaved[stack].hp; r != nil {
			printPhaseEpisodes(w, stack, r.PhasesUs)
		}
	}
	if marks, err := loadCPUMarks(dir); err == nil {
		for _, stack := range []string{"gpuos", "native"} {
			if st, busy, ok := marks.steal(stack + "-interleaved"); ok {
				fmt.Fprintf(w, "host steal during %s's interleaved scenario: %.2f%% of the CPUs' time (busy %.1f%%)\n", stack, 100*st, 100*busy)
			}
		}
	}
	if h, ok := loadHost(dir); ok {
		fmt.Fprintf(w, "host: boot %s (%s, kernel %s)\n", h["boot"], h["cpu"], h["kernel"])
		if p := h["placement"]; p != "" {
			fmt.Fprintf(w, "placement: %s\n", p)
		}
		if e := h["daemon_env"]; e != "" {
			fmt.Fprintf(w, "daemon environment: %s\n", e)
		}
	}
	for _, name := range []string{"hiccup-before", "hiccup-after"} {
		if h, ok := loadHiccups(dir, name); ok {
			fmt.Fprintf(w, "host (%s): %d gaps over 1 ms in %g s on %d CPUs, %.1f ms lost (%.2f%% of their time), the longest %.0f us\n",
				name, h.gaps, h.seconds, h.cpus, h.lostMs, 100*h.lostMs/1e3/(h.seconds*float64(h.cpus)), h.maxUs)
		}
	}
	fmt.Fprintln(w)
	if fails > 0 {
		fmt.Fprintf(w, "%d check(s) failed or did not run\n", fails)
		return fmt.Errorf("%d check(s) failed", fails)
	}
	fmt.Fprintln(w, "all checks passed")
	return nil
}

// hiccups is bench/hiccup's summary: how much of the CPUs the host took away
// while nothing else ran (an idle spinning thread per CPU not running).
type hiccups struct {
	cpus          int
	seconds       float64
	gaps          int // over 1 ms
	lostMs, maxUs float64
}

// loadHiccups reads the summary line of DIR/name.txt.
func loadHiccups(dir, name string) (hiccups, bool) {
	f, err := os.Open(filepath.Join(dir, name+".txt"))
	if err != nil {
		return hiccups{}, false
	}
	defer f.Close()
	var h hiccups
	ok := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var x hiccups
		if n, _ := fmt.Sscanf(sc.Text(), "summary cpus=%d seconds=%g gaps_over_1ms=%d lost_ms=%g max_us=%g",
			&x.cpus, &x.seconds, &x.gaps, &x.lostMs, &x.maxUs); n == 5 && x.cpus > 0 && x.seconds > 0 {
			h, ok = x, true
		}
	}
	return h, ok
}

// loadHost reads DIR/host.txt, run.sh's key=value lines on the machine it
// ran on; ok only if it names the boot (the first 8 of its boot_id's digits
// are kept: enough to tell machine starts apart).
func loadHost(dir string) (h map[string]string, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, "host.txt"))
	if err != nil {
		return nil, false
	}
	h = map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, found := strings.Cut(line, "="); found {
			h[k] = strings.TrimSpace(v)
		}
	}
	boot := strings.ReplaceAll(h["boot"], "-", "")
	if len(boot) < 8 {
		return nil, false
	}
	h["boot"] = boot[:8]
	return h, true
}

// cpuMarks are run.sh's cpumark lines: /proc/stat's cpu counters by name.
type cpuMarks map[string][]float64

// loadCPUMarks reads DIR/cpustat.txt.
func loadCPUMarks(dir string) (cpuMarks, error) {
	f, err := os.Open(filepath.Join(dir, "cpustat.txt"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := cpuMarks{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[1] != "cpu" {
			continue
		}
		var v []float64
		for _, x := range fields[2:] {
			n, err := strconv.ParseFloat(x, 64)
			if err != nil {
				break
			}
			v = append(v, n)
		}
		if len(v) >= 8 {
			m[fields[0]] = v
		}
	}
	return m, sc.Err()
}

// steal returns, between NAME-start and NAME-end, the part of the CPUs'
// time stolen by the hypervisor and the part busy (neither idle, waiting
// for I/O nor stolen). /proc/stat's fields: user nice system idle iowait
// irq softirq steal ...; guest time is already in user.
func (m cpuMarks) steal(name string) (steal, busy float64, ok bool) {
	a, b := m[name+"-start"], m[name+"-end"]
	if a == nil || b == nil {
		return 0, 0, false
	}
	d := make([]float64, 8)
	var total float64
	for i := range d {
		d[i] = b[i] - a[i]
		total += d[i]
	}
	if total <= 0 {
		return 0, 0, false
	}
	return d[7] / total, (d[0] + d[1] + d[2] + d[5] + d[6]) / total, true
}

// printControl prints an interleaved run's control (aloneControl): what the
// P99 ratio reads with no load on either side, on that host at that time.
func printControl(w io.Writer, stack string, phases [][]float64) {
	if x, lo, hi, pairs, ok := aloneControl(phases); ok {
		fmt.Fprintf(w, "%s: control, no load on either side: the alone phases of every second pair / of the pairs between = %.2f (%d pairs; 95%% of draws within %.2f-%.2f)\n",
			stack, x, pairs, lo, hi)
	}
}
