package driver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/backend/auto"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/sched"
	"github.com/gpuos/gpuos/internal/wire"
)

// ExitDeviceLost is a driver process's exit status when its device context was
// lost; the manager restarts it.
const ExitDeviceLost = 3

// ErrDeviceLostExit is returned by RunProcess when the device context was lost;
// the process should exit with ExitDeviceLost.
var ErrDeviceLostExit = v1.Errorf(v1.CodeDeviceLost, "device context lost; the driver process must exit")

// RunProcess is the body of a driver process (gpuos driver): it opens the
// backend, serves the manager's control connection (an inherited descriptor)
// and returns when the manager goes away, ctx ends, or the device is lost.

// NoExpressEnv, set to "0", turns the scheduler's express lane off
// (sched.Options.NoExpress): for measuring what it gives a service.
const NoExpressEnv = "GPUOS_SCHED_EXPRESS"

// NoHighFirstEnv, set to "0", makes a high-class submitter that takes the
// dispatch token dispatch in the scheduler's usual order
// (sched.Options.NoHighFirst): for measuring what issuing the high class
// first gives.
const NoHighFirstEnv = "GPUOS_SCHED_HIGHFIRST"

// GoschedEnv, set to "1", makes the scheduler's poll loops yield with
// runtime.Gosched instead of ring.Yield (sched.Options.Yield): for
// measuring what the difference gives a service.
const GoschedEnv = "GPUOS_SCHED_GOSCHED"

// BlockingWaitEnv, set to "block", makes the scheduler's completion waiters
// sleep until the device interrupts (sched.Options.BlockingWait): for
// measuring what polling costs and gives.
const BlockingWaitEnv = "GPUOS_SCHED_WAIT"

// LowClassPollEnv sets how often the completion waiters of the low class
// query their events (sched.Options.LowClassPoll): a duration, or off
// (they wait in the backend). For measuring; unset, the scheduler's default.
const LowClassPollEnv = "GPUOS_SCHED_LOWPOLL"

// LowClassPaceEnv, set to "0", makes the low class's completion waiters look
// every poll period from the start (sched.Options.NoLowClassPace). For
// measuring.
const LowClassPaceEnv = "GPUOS_SCHED_LOWPACE"

// SpareKicksEnv, set to "0", makes a high-class submitter wake the
// scheduler's background goroutine whenever other work is queued
// (sched.Options.NoSpareKicks). For measuring.
const SpareKicksEnv = "GPUOS_SCHED_SPARE_KICKS"

// LowClassSpinEnv, set to "0", keeps the scheduler's spinner off on a GPU
// (Options.NoLowClassSpin): the low class's completions are then seen by
// their waiters' naps. Set to "1", it turns the spinner on on the software
// GPU too (sched.Options.LowClassSpin). For measuring.
const LowClassSpinEnv = "GPUOS_SCHED_LOWSPIN"

// HighClassStartEnv, set to "0", records no start event before a high-class
// command on an idle accounting chain (sched.Options.NoHighClassStart). For
// measuring.
const HighClassStartEnv = "GPUOS_SCHED_HIGHSTART"

// EpisodeHoldEnv sets how long the best effort's work is held after the
// last of a service's slow launches (sched.Options.EpisodeHold; it needs
// the spinner): a duration ("20ms"), or "off" for no holds. Unset: the
// driver's DefaultEpisodeHold wherever the spinner runs. For measuring.
const EpisodeHoldEnv = "GPUOS_SCHED_EPISODE_HOLD"

// SliceEnv sets the scheduler's slice length (sched.Options.SliceTarget): a
// duration ("100us"), or "off" for no slicing. For measuring what slicing
// costs and buys; unset, the scheduler's default.
const SliceEnv = "GPUOS_SCHED_SLICE"

// sliceTarget reads SliceEnv.
func sliceTarget() (time.Duration, error) { return durationOrOff(SliceEnv) }

// schedSwitches reads the scheduler's switches for measuring from the
// environment (docs/scheduling.md, "Switches for measuring"); noLowSpin is
// $GPUOS_SCHED_LOWSPIN=0 (Options.NoLowClassSpin).
func schedSwitches() (so sched.Options, noLowSpin bool, err error) {
	slice, err := sliceTarget()
	if err != nil {
		return so, false, err
	}
	lowPoll, err := durationOrOff(LowClassPollEnv)
	if err != nil {
		return so, false, err
	}
	episodeHold, err := durationOrOff(EpisodeHoldEnv)
	if err != nil {
		return so, false, err
	}
	var lowSpin bool
	switch v := os.Getenv(LowClassSpinEnv); v {
	case "":
	case "0":
		noLowSpin = true
	case "1":
		lowSpin = true
	default:
		return so, false, fmt.Errorf("%s=%q: want 0 (off) or 1 (on on the software GPU too)", LowClassSpinEnv, v)
	}
	so = sched.Options{NoExpress: os.Getenv(NoExpressEnv) == "0", NoHighFirst: os.Getenv(NoHighFirstEnv) == "0",
		SliceTarget: slice, BlockingWait: os.Getenv(BlockingWaitEnv) == "block", LowClassPoll: lowPoll,
		NoLowClassPace: os.Getenv(LowClassPaceEnv) == "0", NoSpareKicks: os.Getenv(SpareKicksEnv) == "0",
		NoHighClassStart: os.Getenv(HighClassStartEnv) == "0", LowClassSpin: lowSpin, EpisodeHold: episodeHold}
	return so, noLowSpin, nil
}

// durationOrOff reads an environment variable holding a positive duration,
// or "off" (-1); unset is 0 (the default).
func durationOrOff(name string) (time.Duration, error) {
	switch v := os.Getenv(name); v {
	case "":
		return 0, nil
	case "off":
		return -1, nil
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%s=%q: want a positive duration or off", name, v)
		}
		return d, nil
	}
}

func RunProcess(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("gpuos driver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	controlFD := fs.Int("control-fd", -1, "descriptor of the control connection to the manager")
	device := fs.Int("device", 0, "device ordinal")
	backendName := fs.String("backend", "auto", "backend: auto, sim or cuda")
	auditPath := fs.String("audit", "", "audit log file")
	devMem := fs.Uint64("device-memory", 0, "cap on device memory in bytes (0: all)")
	swap := fs.Int64("swap", 0, "pinned host memory for swapping, in bytes (0: twice the device limit, within half the host's memory; negative: no swapping)")
	swapReserve := fs.Uint64("swap-reserve", 0, "pinned host memory for swapping to pin at start, in the background, in bytes (0: none; pinning is slow, so evictions that find it ready copy at once)")
	minRes := fs.Duration("min-residency", 0, "how long a session just swapped in is kept from eviction (0: the default)")
	reserveSMs := fs.Int("reserve-sms", 0, "SMs kept free for tenants of class high: other tenants' streams run on the rest (0: none)")
	limits := fs.String("limits", "", "session limits: handles=N,buffers=N,in_flight=N,queue_depth=N")
	simMem := fs.String("sim-memory", "", "memory of each software GPU")
	verbose := fs.Bool("v", false, "log at debug level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *controlFD < 0 {
		return fmt.Errorf("--control-fd is required: the driver is started by gpuos serve")
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("driver", *device)
	lim, err := parseLimits(*limits)
	if err != nil {
		return err
	}
	// Before the backend starts its threads: they inherit it.
	if err := KeepOffHighClassCPUs(); err != nil {
		return err
	}
	var simOpts sim.Options
	if *simMem != "" {
		n, err := config.ParseSize(*simMem)
		if err != nil {
			return fmt.Errorf("--sim-memory: %w", err)
		}
		simOpts.Memory = uint64(n)
	}
	choice, err := auto.Open(*backendName, auto.Options{Sim: simOpts})
	if err != nil {
		return err
	}
	log.Debug("backend chosen", "backend", choice.Backend.Name(), "why", choice.Reason)
	var al *audit.Logger
	if *auditPath != "" {
		if al, err = audit.Open(*auditPath, audit.Options{}); err != nil {
			return err
		}
		defer al.Close()
	}
	so, noLowSpin, err := schedSwitches()
	if err != nil {
		return err
	}
	for _, r := range []windowRecorder{goTraceWindow, cpuProfileWindow} {
		if _, err := r.startWindow(ctx, log); err != nil {
			return err
		}
	}
	go watchYields(ctx, log, yieldReport, ring.LongYields)
	d, err := New(Options{Backend: choice.Backend, Ordinal: *device, Audit: al, Limits: lim,
		DeviceMemoryLimit: *devMem, Log: log, SwapLimit: *swap, SwapReserve: *swapReserve, MinResidency: *minRes, ReserveSMs: *reserveSMs,
		Sched: so, NoLowClassSpin: noLowSpin})
	if err != nil {
		return err
	}
	conn, err := wire.FromFD(*controlFD)
	if err != nil {
		d.Close()
		return fmt.Errorf("control connection: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- d.ServeControl(ctx, conn) }()
	select {
	case err = <-served:
		// The manager is gone: nobody can place sessions here any more.
		d.Close()
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	case <-d.Lost():
		// A lost context cannot be recovered in this process: the caller exits
		// so the manager starts a fresh one; sessions see their connections break.
		log.Error("device lost; exiting", "err", d.LostErr())
		return ErrDeviceLostExit
	case <-ctx.Done():
		d.Close()
		return nil
	}
}

func parseLimits(s string) (config.SessionLimits, error) {
	var l config.SessionLimits
	if s == "" {
		return l, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return l, fmt.Errorf("--limits: bad entry %q", kv)
		}
		switch k {
		case "handles":
			l.Handles = n
		case "buffers":
			l.Buffers = n
		case "in_flight":
			l.InFlight = n
		case "queue_depth":
			l.QueueDepth = n
		default:
			return l, fmt.Errorf("--limits: unknown limit %q", k)
		}
	}
	return l, nil
}

// yieldReport is how often the driver process looks at its poll loops'
// long yields (watchYields).
const yieldReport = 10 * time.Second

// watchYields looks at the process's poll loops' long yields (longYields,
// a count: ring.LongYields) every period and logs those it has not yet
// (logLongYields).
func watchYields(ctx context.Context, log *slog.Logger, period time.Duration, longYields func() uint64) {
	t := time.NewTicker(period)
	defer t.Stop()
	var seen uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		seen = logLongYields(log, seen, longYields())
	}
}

// logLongYields logs that the poll loops yielded the CPU to a thread that
// kept it, and so stopped yielding for a while, n times in all, if that is
// more than the seen already logged; it returns the count logged. Many, or
// in every period, mean a CPU hog shares the daemon's CPUs (a nice or
// SCHED_IDLE job), which the service's latency feels; a few come from the
// daemon's own threads or the hypervisor taking the CPU (on the H100's
// host, 1-4 each 10 s with no hog, bench/RESULTS.md session 22).
func logLongYields(log *slog.Logger, seen, n uint64) uint64 {
	if n > seen {
		log.Info("poll loops yielded the CPU to threads that kept it, and spin without yielding for a while (many, often: a CPU hog on the daemon's CPUs?)",
			"long_yields", n-seen, "over", ring.LongYield, "total", n)
	}
	return max(seen, n)
}
