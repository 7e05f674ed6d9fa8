package cuda

import (
	"bufio"
	"fmt"
	"os"
	"sync"
	"time"
)

// The slow-call log, a diagnostic: with $GPUOS_CUDA_SLOW_LOG naming a file,
// every driver call that takes at least $GPUOS_CUDA_SLOW (a Go duration,
// default 200µs), other than the synchronizing ones, is appended to it as
// "name,start_unix_ns,duration_ns"; so is a completion waiter's return to Go
// from cuEventSynchronize that took as long ("go:return(cuEventSynchronize)").
// A call that blocks inside the driver (on its own locks, or a full queue)
// holds up every thread that needs the driver meanwhile; this log says which
// call, when, and for how long. Off, a call costs one branch.
const (
	SlowLogEnv       = "GPUOS_CUDA_SLOW_LOG"
	SlowThresholdEnv = "GPUOS_CUDA_SLOW"
)

// slowLogOnce starts the log at most once per process, before the first
// driver call.
var slowLogOnce sync.Once

func startSlowLog() {
	slowLogOnce.Do(func() {
		path := os.Getenv(SlowLogEnv)
		if path == "" || !haveCgo {
			return
		}
		threshold := 200 * time.Microsecond
		if v, err := time.ParseDuration(os.Getenv(SlowThresholdEnv)); err == nil && v > 0 {
			threshold = v
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return
		}
		slowEnable(uint64(threshold))
		go drainSlowLog(f)
	})
}

// drainSlowLog copies the ring to f every 100 ms, for the process's life.
func drainSlowLog(f *os.File) {
	w := bufio.NewWriter(f)
	var next, lost uint64
	for {
		time.Sleep(100 * time.Millisecond)
		for {
			name, at, dur, ok, gone := slowRead(next)
			if gone {
				lost++
				next++
				continue
			}
			if !ok {
				break
			}
			fmt.Fprintf(w, "%s,%d,%d\n", name, at, dur)
			next++
		}
		if lost > 0 {
			fmt.Fprintf(w, "lost,%d,%d\n", time.Now().UnixNano(), lost)
			lost = 0
		}
		w.Flush()
	}
}
