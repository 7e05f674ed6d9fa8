//go:build linux

package ring

import "golang.org/x/sys/unix"

// osYield gives up the CPU to any other runnable thread (sched_yield); it
// returns at once when there is none. It does not block, so it needs no
// entersyscall bookkeeping.
func osYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
