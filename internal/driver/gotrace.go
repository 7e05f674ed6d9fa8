package driver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
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
// prints it.
const (
	goTraceEnv       = "GPUOS_GO_TRACE"
	goTraceWindowEnv = "GPUOS_GO_TRACE_WINDOW"
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
		return 0, 0, fmt.Errorf("$%s=%q: want AFTER+FOR, e.g. 8s+1s", goTraceWindowEnv, s)
	}
	return after, span, nil
}

// startWindowTrace starts the window trace if $GPUOS_GO_TRACE asks for one:
// an error for a window it cannot read; one writing the trace is logged.
// done is closed once the trace is written (or given up).
func startWindowTrace(ctx context.Context, log *slog.Logger) (done <-chan struct{}, err error) {
	path := os.Getenv(goTraceEnv)
	after, span, err := parseTraceWindow(os.Getenv(goTraceWindowEnv))
	if path == "" || err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		if !sleepCtx(ctx, after) {
			return
		}
		f, err := os.Create(path)
		if err != nil {
			log.Warn("go trace", "err", err)
			return
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			log.Warn("go trace", "err", err)
			return
		}
		sleepCtx(ctx, span)
		trace.Stop()
		log.Info("go trace written", "file", path, "for", span)
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
