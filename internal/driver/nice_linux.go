package driver

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// placeThread locks the calling goroutine to its OS thread, then sets the
// thread's nice value (setNice) and the CPUs it may run on (cpus, if any).
// restore puts the old ones back and unlocks; if it cannot (raising a nice
// value back down needs CAP_SYS_NICE), the thread stays locked and ends
// with the goroutine, so no other goroutine inherits its priority or CPUs
// (the process's main thread, which cannot end, is left idle).
func placeThread(nice int, setNice bool, cpus []int) (restore func(), err error) {
	runtime.LockOSThread()
	tid := unix.Gettid()
	oldNice, niceSet := 0, false
	var oldCPUs unix.CPUSet
	cpusSet := false
	undo := func() {
		ok := !cpusSet || unix.SchedSetaffinity(0, &oldCPUs) == nil
		if niceSet && unix.Setpriority(unix.PRIO_PROCESS, tid, oldNice) != nil {
			ok = false
		}
		if ok {
			runtime.UnlockOSThread()
		}
	}
	if setNice {
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
		if err == nil {
			err = unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
		}
		if err != nil {
			undo()
			return nil, err
		}
		oldNice, niceSet = 20-prio, true // the system call returns 20 - nice
	}
	if len(cpus) > 0 {
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		err := unix.SchedGetaffinity(0, &oldCPUs)
		if err == nil {
			err = unix.SchedSetaffinity(0, &set)
		}
		if err != nil {
			undo()
			return nil, err
		}
		cpusSet = true
	}
	return undo, nil
}

// keepThreadsOff moves every thread of the process off cpus, onto the rest
// of the CPUs it may run on; threads started later inherit that from their
// creator. Go starts the threads it needs from a locked thread (the
// high-class session's, placeThread) through a template thread, so they too
// stay off. It scans the threads until a scan finds none to move, since a
// thread may start during one.
func keepThreadsOff(cpus []int) error {
	var rest unix.CPUSet
	if err := unix.SchedGetaffinity(0, &rest); err != nil {
		return err
	}
	for _, c := range cpus {
		rest.Clear(c)
	}
	if rest.Count() == 0 {
		return fmt.Errorf("CPUs %v are all this process may run on: none left for its other threads", cpus)
	}
	for range 10 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		moved := 0
		for _, e := range tasks {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			var set unix.CPUSet
			if unix.SchedGetaffinity(tid, &set) != nil || set == rest {
				continue // ended meanwhile, or already placed
			}
			if err := unix.SchedSetaffinity(tid, &rest); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
			moved++
		}
		if moved == 0 {
			return nil
		}
	}
	return errors.New("threads kept starting while they were moved")
}
