//go:build linux

package ring

import "golang.org/x/sys/unix"

// osYield gives up the CPU to any other runnable thread (sched_yield); it
// returns at once when there is none. It does not block, so it needs no
// entersyscall bookkeeping.
func osYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// Yield is osYield for other packages' poll loops: unlike runtime.Gosched,
// which lets any other runnable goroutine have the goroutine's P first, it
// keeps the goroutine where it is and lets the kernel run another thread on
// this CPU if one is waiting.
func Yield() { osYield() }
