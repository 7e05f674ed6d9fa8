package driver

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// raiseThread locks the calling goroutine to its OS thread and sets the
// thread's nice value. restore puts the old value back and unlocks; if it
// cannot (raising a nice value back down needs CAP_SYS_NICE), the thread
// stays locked and ends with the goroutine, so no other goroutine inherits
// its priority (the process's main thread, which cannot end, is left idle).
func raiseThread(nice int) (restore func(), err error) {
	runtime.LockOSThread()
	tid := unix.Gettid()
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err == nil {
		err = unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
	}
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	old := 20 - prio // the system call returns 20 - nice
	return func() {
		if unix.Setpriority(unix.PRIO_PROCESS, tid, old) == nil {
			runtime.UnlockOSThread()
		}
	}, nil
}
