package driver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"
)

// Window traces, a diagnostic: with $GPUOS_GO_TRACE naming a file, the
// driver process writes its Go execution trace (runtime/trace) of one window
// of time there: $GPUOS_GO_TRACE_WINDOW, "AFTER+FOR" (default "0s+1s"),
// after the driver started. It shows what stall traces cannot, the steady
// state: which goroutine wakes which and how often the runtime starts and
// parks threads (bench/RESULTS.md, session 12). "go tool trace -d=parsed"
// prints it. $GPUOS_CPU_PROFILE and $GPUOS_CPU_PROFILE_WINDOW do the same for
// a CPU profile (runtime/pprof): where the driver's CPU time goes, e.g. what
// a best-effort load adds (session 23). "go tool pprof BINARY FILE" reads it.
const (
	goTraceEnv          = "GPUOS_GO_TRACE"
	goTraceWindowEnv    = "GPUOS_GO_TRACE_WINDOW"
	cpuProfileEnv       = "GPUOS_CPU_PROFILE"
	cpuProfileWindowEnv = "GPUOS_CPU_PROFILE_WINDOW"
)

// windowRecorder is one kind of window recording: the variables that ask for
// it and how it starts and stops.
type windowRecorder struct {
	fileEnv, windowEnv string
	start              func(io.Writer) error
	stop               func()
}

var (
	goTraceWindow    = windowRecorder{goTraceEnv, goTraceWindowEnv, trace.Start, trace.Stop}
	cpuProfileWindow = windowRecorder{cpuProfileEnv, cpuProfileWindowEnv, pprof.StartCPUProfile, pprof.StopCPUProfile}
)

// parseTraceWindow reads "AFTER+FOR": two Go durations, FOR positive.
func parseTraceWindow(s string) (after, span time.Duration, err error) {
	if s == "" {
		return 0, time.Second, nil
	}
	a, f, ok := strings.Cut(s, "+")
	if ok {
		after, err = time.ParseDuration(a)
	}
	if ok && err == nil {
		span, err = time.ParseDuration(f)
	}
	if !ok || err != nil || after < 0 || span <= 0 {
		return 0, 0, fmt.Errorf("%q: want AFTER+FOR, e.g. 8s+1s", s)
	}
	return after, span, nil
}

// startWindow starts the recording if its variable names a file: an error
// for a window it cannot read; one writing the recording is logged. done is
// closed once the recording is written (or given up).
func (r windowRecorder) startWindow(ctx context.Context, log *slog.Logger) (done <-chan struct{}, err error) {
	path := os.Getenv(r.fileEnv)
	after, span, err := parseTraceWindow(os.Getenv(r.windowEnv))
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", r.windowEnv, err)
	}
	if path == "" {
		return nil, nil
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		if !sleepCtx(ctx, after) {
			return
		}
		f, err := os.Create(path)
		if err != nil {
			log.Warn("window recording", "env", r.fileEnv, "err", err)
			return
		}
		defer f.Close()
		if err := r.start(f); err != nil {
			log.Warn("window recording", "env", r.fileEnv, "err", err)
			return
		}
		sleepCtx(ctx, span)
		r.stop()
		log.Info("window recording written", "env", r.fileEnv, "file", path, "for", span)
	}()
	return ch, nil
}

// sleepCtx sleeps for d, false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
