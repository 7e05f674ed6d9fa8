//go:build !linux

package ring

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Shared memory needs memfd, which only Linux has: elsewhere Create and Open
// fail with ErrUnsupported, and clients stay on their sockets.

// Shm is a shared memory object mapped into this process.
type Shm struct{}

// Create fails with ErrUnsupported.
func Create(name string, size int, populate bool) (*Shm, error) { return nil, ErrUnsupported }

// Open fails with ErrUnsupported; it does not take fd.
func Open(fd int, size int, populate bool) (*Shm, error) { return nil, ErrUnsupported }

// Bytes returns nil.
func (s *Shm) Bytes() []byte { return nil }

// FD returns -1.
func (s *Shm) FD() int { return -1 }

// TakeFD returns -1.
func (s *Shm) TakeFD() int { return -1 }

// Close does nothing.
func (s *Shm) Close() error { return nil }

func futexWait(w *atomic.Uint32, val uint32, d time.Duration) {
	if w.Load() == val {
		time.Sleep(min(d, time.Millisecond))
	}
}

func futexWake(*atomic.Uint32) {}

func osYield() { runtime.Gosched() }

// Yield is osYield for other packages' poll loops.
func Yield() { osYield() }

// LongYields is 0: runtime.Gosched hands the CPU to no other thread.
func LongYields() uint64 { return 0 }
