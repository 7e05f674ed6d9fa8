package manager

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/sched"
)

func TestParseStatNice(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		nice       int
		ok         bool
	}{
		{"plain", "1234 (bash) S 1 1234 1234 34816 1234 4194304 100 0 0 0 1 2 0 0 20 0 1 0 100 1000 200", 0, true},
		{"niced", "1234 (job) R 1 1234 1234 0 -1 4194304 100 0 0 0 1 2 0 0 39 19 1 0 100 1000 200", 19, true},
		{"negative", "7 (svc) S 1 7 7 0 -1 4194304 1 0 0 0 0 0 0 0 0 -20 1 0 1 1 1", -20, true},
		{"spaces and parens in the name", "99 (a (b) c) S 1 99 99 0 -1 0 0 0 0 0 0 0 0 0 25 5 1 0 1 1 1", 5, true},
		{"no name", "99 S 1 99", 0, false},
		{"short", "99 (x) S 1 2 3", 0, false},
		{"not a number", "99 (x) S 1 99 99 0 -1 0 0 0 0 0 0 0 0 0 20 nice 1 0 1 1 1", 0, false},
		{"out of range", "99 (x) S 1 99 99 0 -1 0 0 0 0 0 0 0 0 0 20 40 1 0 1 1 1", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := parseStatNice([]byte(tc.line))
			if (err == nil) != tc.ok || (tc.ok && n != tc.nice) {
				t.Errorf("parseStatNice = %d, %v; want %d, ok=%v", n, err, tc.nice, tc.ok)
			}
		})
	}
}

func FuzzParseStatNice(f *testing.F) {
	f.Add([]byte("1234 (bash) S 1 1234 1234 34816 1234 4194304 100 0 0 0 1 2 0 0 20 0 1 0 100 1000 200"))
	f.Add([]byte("99 (a (b) c) S 1 99 99 0 -1 0 0 0 0 0 0 0 0 0 25 5 1 0 1 1 1"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseStatNice(b)
		if err == nil && (n < -20 || n > 19) {
			t.Fatalf("nice %d out of range accepted", n)
		}
	})
}

// TestNiceOfRealProcess reads the nice value of processes started at nice 0
// and at nice 7, and maps them to classes.
func TestNiceOfRealProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	self, err := niceOf(int32(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	nicePath, err := exec.LookPath("nice")
	if err != nil {
		t.Skip("no nice command")
	}
	cmd := exec.Command(nicePath, "-n", "7", "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var n int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		// nice execs sleep in the same process once it has set the value.
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/comm")
		if string(b) == "sleep\n" {
			if n, err = niceOf(int32(cmd.Process.Pid)); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nice never ran sleep")
		}
	}
	if want := min(self+7, 19); n != want {
		t.Errorf("nice of a process started with nice -n 7 = %d, want %d", n, want)
	}
	if c := sched.ClassFromNice(n); c != sched.ClassLow {
		t.Errorf("class of nice %d = %v, want low", n, c)
	}
	if _, err := niceOf(-1); err == nil {
		t.Error("niceOf(-1) succeeded")
	}
}
