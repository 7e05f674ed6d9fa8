package driver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/sched"
	"golang.org/x/sys/unix"
)

// threadsWithNice returns this process's threads whose nice value is nice
// (/proc/self/task/TID/stat, field 19).
func threadsWithNice(t *testing.T, nice int) (tids []int) {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended meanwhile
		}
		// The command name, in parentheses, may hold spaces: count from after it.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if v, err := strconv.Atoi(f[16]); err == nil && v == nice {
			tid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			tids = append(tids, tid)
		}
	}
	return tids
}

// TestHighClassNice: with $GPUOS_HIGH_NICE, a high-class session is served on
// a thread of its own with that nice value, which no other goroutine gets
// after the session (the value is restored, or the thread ends); sessions of
// other classes are served as before.
func TestHighClassNice(t *testing.T) {
	nice := 0 // a value no thread has yet (raising a nice value needs no privilege)
	for v := 1; v < 20 && nice == 0; v++ {
		if len(threadsWithNice(t, v)) == 0 {
			nice = v
		}
	}
	if nice == 0 {
		t.Skip("threads of every positive nice value already")
	}
	t.Setenv(HighClassNiceEnv, strconv.Itoa(nice))
	checkHighClassThread(t, fmt.Sprintf("with nice %d", nice), true, func() []int { return threadsWithNice(t, nice) })
}

// checkHighClassThread checks a placement of the high class's serving
// thread, which placed finds: a best-effort session's thread is not placed,
// a high-class session's is, and once that session ended no thread is (its
// setting restored, or the thread ended; with mainMayKeep, the main thread,
// left idle if it could not be restored, does not count). It returns the
// driver, with tenants hp (high) and be (low).
func checkHighClassThread(t *testing.T, what string, mainMayKeep bool, placed func() []int) *testDriver {
	t.Helper()
	td := newTestDriver(t, 64<<20, Options{Sched: sched.Options{Policy: "priority"}})
	for name, class := range map[string]sched.Class{"hp": sched.ClassHigh, "be": sched.ClassLow} {
		if err := td.d.sched.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
			t.Fatal(err)
		}
	}
	be := td.session("be", 0)
	be.must(&v1.Synchronize{}, nil)
	if n := len(placed()); n != 0 {
		t.Fatalf("a best-effort session: %d threads %s, want 0", n, what)
	}
	hp := td.session("hp", 0)
	hp.must(&v1.Synchronize{}, nil)
	if n := len(placed()); n != 1 {
		t.Fatalf("a high-class session: %d threads %s, want 1", n, what)
	}
	hp.rpc.Close()
	<-hp.s.Done()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		tids := placed()
		if len(tids) == 0 || (mainMayKeep && len(tids) == 1 && tids[0] == os.Getpid()) {
			return td
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads %v of the ended session still run %s", tids, what)
		}
	}
}

// allowedCPUs returns the CPUs this thread may run on, skipping the test if
// there is only one (a thread placed on it could not be told apart).
func allowedCPUs(t *testing.T) []int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for c := 0; c <= maxCPU; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		t.Skip("one CPU allowed")
	}
	return cpus
}

// threadsOnlyOn returns this process's threads that may run on cpu alone.
func threadsOnlyOn(t *testing.T, cpu int) (tids []int) {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tasks {
		tid, _ := strconv.Atoi(filepath.Base(p))
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) != nil {
			continue // the thread ended meanwhile
		}
		if set.Count() == 1 && set.IsSet(cpu) {
			tids = append(tids, tid)
		}
	}
	return tids
}

// TestHighClassCPUs: with $GPUOS_HIGH_CPUS, a high-class session is served
// on a thread of its own that runs only on those CPUs, which no other
// goroutine gets after the session; sessions of other classes are served as
// before. A malformed list is logged and the session served as usual.
func TestHighClassCPUs(t *testing.T) {
	allowed := allowedCPUs(t)
	cpu := allowed[len(allowed)-1]
	if n := len(threadsOnlyOn(t, cpu)); n != 0 {
		t.Skipf("%d threads already run on CPU %d alone", n, cpu)
	}
	t.Setenv(HighClassCPUsEnv, strconv.Itoa(cpu))
	td := checkHighClassThread(t, fmt.Sprintf("on CPU %d alone", cpu), false, func() []int { return threadsOnlyOn(t, cpu) })

	t.Setenv(HighClassCPUsEnv, "2-1")
	bad := td.session("hp", 0)
	bad.must(&v1.Synchronize{}, nil)
	if n := len(threadsOnlyOn(t, cpu)); n != 0 {
		t.Errorf("a malformed list: %d threads on CPU %d alone, want 0", n, cpu)
	}
}

// TestKeepThreadsOff runs keepThreadsOff([the last allowed CPU]) in a child
// process, then has it start threads (from an ordinary thread and from one
// placed on that CPU, as a high-class session's is) and report every
// thread that may run there: only the placed one may.
func TestKeepThreadsOff(t *testing.T) {
	if v := os.Getenv("GPUOS_TEST_KEEP_OFF"); v != "" {
		keepThreadsOffChild(v)
		return
	}
	allowed := allowedCPUs(t)
	cpu := allowed[len(allowed)-1]
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeepThreadsOff$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GPUOS_TEST_KEEP_OFF="+strconv.Itoa(cpu))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "placed 1, others on it 0") {
		t.Errorf("child, for CPU %d:\n%s", cpu, out)
	}

	if err := keepThreadsOff(allowed); err == nil { // refused before any thread is moved
		t.Error("keepThreadsOff of every allowed CPU: no error")
	}
}

func keepThreadsOffChild(v string) {
	cpu, _ := strconv.Atoi(v)
	if err := keepThreadsOff([]int{cpu}); err != nil {
		fmt.Println("keepThreadsOff:", err)
		os.Exit(1)
	}
	// Threads started from the ordinary threads, and from a placed one.
	hold := make(chan struct{})
	var started sync.WaitGroup
	startLocked := func(n int) {
		for range n {
			started.Add(1)
			go func() { runtime.LockOSThread(); started.Done(); <-hold }()
		}
	}
	startLocked(4)
	placed := make(chan int)
	go func() {
		if _, err := placeThread(0, false, []int{cpu}); err != nil {
			fmt.Println("placeThread:", err)
			os.Exit(1)
		}
		startLocked(4)
		placed <- unix.Gettid()
		<-hold
	}()
	tid := <-placed
	started.Wait()
	tasks, _ := os.ReadDir("/proc/self/task")
	on, others := 0, 0
	for _, e := range tasks {
		id, _ := strconv.Atoi(e.Name())
		var set unix.CPUSet
		if unix.SchedGetaffinity(id, &set) != nil || !set.IsSet(cpu) {
			continue
		}
		if id == tid {
			on++
		} else {
			others++
		}
	}
	fmt.Printf("threads %d, placed %d, others on it %d\n", len(tasks), on, others)
	close(hold)
}
