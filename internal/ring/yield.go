//go:build linux

package ring

import (
	"os"

	"golang.org/x/sys/unix"
)

// YieldEnv, set to "0", makes the poll loops of this process spin without
// giving up the CPU (osYield does nothing): for comparing the two on a GPU
// host, where a sched_yield to another runnable thread on the poller's CPU
// can keep the poller off it for that thread's whole time slice.
const YieldEnv = "GPUOS_RING_YIELD"

var yieldOff = os.Getenv(YieldEnv) == "0"

// osYield gives up the CPU to any other runnable thread (sched_yield); it
// returns at once when there is none. It does not block, so it needs no
// entersyscall bookkeeping.
func osYield() {
	if !yieldOff {
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}

// Yield is osYield for other packages' poll loops: unlike runtime.Gosched,
// which lets any other runnable goroutine have the goroutine's P first, it
// keeps the goroutine where it is and lets the kernel run another thread on
// this CPU if one is waiting.
func Yield() { osYield() }
