package driver

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/sched"
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
	td := newTestDriver(t, 64<<20, Options{Sched: sched.Options{Policy: "priority"}})
	for name, class := range map[string]sched.Class{"hp": sched.ClassHigh, "be": sched.ClassLow} {
		if err := td.d.sched.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
			t.Fatal(err)
		}
	}
	be := td.session("be", 0)
	be.must(&v1.Synchronize{}, nil)
	if n := len(threadsWithNice(t, nice)); n != 0 {
		t.Fatalf("a best-effort session: %d threads with nice %d, want 0", n, nice)
	}
	hp := td.session("hp", 0)
	hp.must(&v1.Synchronize{}, nil)
	if n := len(threadsWithNice(t, nice)); n != 1 {
		t.Fatalf("a high-class session: %d threads with nice %d, want 1", n, nice)
	}
	hp.rpc.Close()
	<-hp.s.Done()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tids := threadsWithNice(t, nice)
		if len(tids) == 0 || (len(tids) == 1 && tids[0] == os.Getpid()) {
			break // restored, or the thread ended, or it is the main thread, left idle
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads %v of the ended session still run with its nice value", tids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
