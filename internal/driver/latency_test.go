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

// With the latency diagnostic on, a session stamps each launch command's
// stages and writes their percentiles and slowest commands when asked.
func TestLaunchLatencyStages(t *testing.T) {
	f := newJoinFixtureWith(t, Options{Sched: sched.Options{CountIssuing: true}}) // as with $GPUOS_LATENCY_LOG
	f.s.latency = &latencyRec{}
	f.s.joinFixed = 1 // a command a launch
	for range 3 {
		f.launch(0, f.sms+1) // not small: a command of its own
	}
	f.add(0, &v1.Synchronize{})
	sc := f.serve(func() { close(f.rec.gate) })
	if len(sc.errs) != 0 {
		t.Fatalf("errors: %v", sc.errs)
	}
	f.s.waitLaunchDones()
	f.s.latency.mu.Lock()
	n := f.s.latency.stamps.n
	for _, st := range f.s.latency.stamps.all() {
		if st.recv.IsZero() || st.issue0.Before(st.recv) || st.issue1.Before(st.issue0) || st.synced.Before(st.issue1) || st.done.Before(st.synced) {
			t.Errorf("stamps out of order: %+v", st)
		}
	}
	f.s.latency.mu.Unlock()
	if n != 3 {
		t.Fatalf("%d launch commands stamped, want 3", n)
	}
	path := filepath.Join(t.TempDir(), "latency.log")
	f.s.latency.write(path, "test")
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"session test: 3 launch commands, 0 by the express lane", "recv->issue", "issue (driver)", "issued->done", "synced->done", "recv->done", "slow: ", "process so far: sched latency >=100us"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	// Every command's times, in stage order, in the CSV beside it.
	csv, err := os.ReadFile(path + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(rows) != 3 {
		t.Fatalf("%d CSV rows, want 3:\n%s", len(rows), csv)
	}
	for _, row := range rows {
		f := strings.Split(row, ",")
		if len(f) != 13 || f[0] != `"test"` || f[6] != "false" || f[9] != "0" || f[10] != "0" || f[12] != "0" {
			t.Fatalf("row %q: want the session, 5 times, false (not expressed: one tenant), the submit time, the handler's return, 0 (no fence: the session does not poll fences), 0 (not served by a hedge's helper: no rings), the lock's time and 0 (no other goroutine issuing: one session)", row)
		}
		var prev int64
		for _, x := range f[1:6] {
			v, err := strconv.ParseInt(x, 10, 64)
			if err != nil || v < prev {
				t.Errorf("row %q: times not increasing", row)
			}
			prev = v
		}
		// Handed to the scheduler between its receipt and its issue.
		recv, _ := strconv.ParseInt(f[1], 10, 64)
		issue0, _ := strconv.ParseInt(f[2], 10, 64)
		if submit, err := strconv.ParseInt(f[7], 10, 64); err != nil || submit < recv || submit > issue0 {
			t.Errorf("row %q: submit time not between receipt and issue", row)
		}
		// The scheduler's lock taken after the hand-over, before the issue.
		submit0, _ := strconv.ParseInt(f[7], 10, 64)
		if locked, err := strconv.ParseInt(f[11], 10, 64); err != nil || locked < submit0 || locked > issue0 {
			t.Errorf("row %q: lock time %q not between the hand-over and the issue", row, f[11])
		}
		// The handler returned after it handed the command over (here the
		// dispatcher issues it later, held by the gate).
		submit, _ := strconv.ParseInt(f[7], 10, 64)
		if served, err := strconv.ParseInt(f[8], 10, 64); err != nil || served < submit {
			t.Errorf("row %q: handler's return %q not after the hand-over", row, f[8])
		}
	}
	// And the synchronize's: received, its commands issued, synced, and how
	// it waited (this session has no rings, so it does not poll fences).
	syncCSV, err := os.ReadFile(path + ".sync.csv")
	if err != nil {
		t.Fatal(err)
	}
	f2 := strings.Split(strings.TrimSpace(string(syncCSV)), ",")
	if len(f2) != 5 || f2[0] != `"test"` || f2[4] != "0" {
		t.Fatalf("sync CSV %q: want one row, the session, 3 times and 0 (a stream synchronize)", syncCSV)
	}
	var prev int64
	for _, x := range f2[1:4] {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil || v <= 0 || v < prev {
			t.Errorf("sync row %q: times not increasing", syncCSV)
		}
		prev = v
	}
}

// A service's stall writes the flight recording once, then not again within
// two seconds.
func TestStallTrace(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(stallTraceEnv, dir)
	tr := &stallTracer{}
	tr.start()
	if tr.fr == nil {
		t.Fatal("flight recorder not started")
	}
	defer tr.fr.Stop()
	defer tr.writing.Wait() // the recorder stops after its writes
	l := &latencyRec{service: true}
	saved := stallTraces
	stallTraces = tr
	defer func() { stallTraces = saved }()
	t0 := time.Now()
	l.received(t0)
	l.received(t0.Add(3 * time.Millisecond))  // a gap: a trace
	l.received(t0.Add(10 * time.Millisecond)) // another, too soon for a second trace
	l.received(t0.Add(time.Second))           // an idle pause: no stall
	deadline := time.Now().Add(10 * time.Second)
	var files []string
	for time.Now().Before(deadline) {
		files, _ = filepath.Glob(filepath.Join(dir, "stall-*.trace"))
		if len(files) > 0 {
			if fi, err := os.Stat(files[0]); err == nil && fi.Size() > 0 {
				time.Sleep(200 * time.Millisecond)
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	files, _ = filepath.Glob(filepath.Join(dir, "stall-*.trace"))
	if len(files) != 1 {
		t.Fatalf("%d traces written, want 1", len(files))
	}
	if tr.written != 1 {
		t.Errorf("%d stalls written, want 1", tr.written)
	}
}

// TestChunked: the latency log's list keeps every value in order across
// chunks, and no more than latencyMax.
func TestChunked(t *testing.T) {
	var c chunked[int]
	for i := range latencyMax + 10 {
		c.add(i)
	}
	all := c.all()
	if len(all) != latencyMax || c.n != latencyMax {
		t.Fatalf("kept %d (n %d), want %d", len(all), c.n, latencyMax)
	}
	for i, v := range all {
		if v != i {
			t.Fatalf("value %d is %d", i, v)
		}
	}
}

// A session that polls fences stamps when the fence behind a launch was
// enqueued: after cuLaunchKernel returned, before the command completed.
func TestLaunchLatencyFenced(t *testing.T) {
	f := newScriptFixture(t, newTestDriver(t, 256<<20, Options{Sched: sched.Options{CountIssuing: true}}), "fenced")
	f.s.latency = &latencyRec{}
	f.s.fencePoll.Store(int64(time.Millisecond))
	// Prefence off: the script's requests are not on the session's ring,
	// which prefence looks at.
	defer prefenceOn.Store(prefenceOn.Swap(false))
	f.launch(0, f.sms+1)
	f.add(0, &v1.Synchronize{})
	if sc := f.serve(nil); len(sc.errs) != 0 {
		t.Fatalf("errors: %v", sc.errs)
	}
	f.s.waitLaunchDones()
	path := filepath.Join(t.TempDir(), "latency.log")
	f.s.latency.write(path, "test")
	csv, err := os.ReadFile(path + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	row := strings.TrimSpace(string(csv))
	x := strings.Split(row, ",")
	if len(x) != 13 {
		t.Fatalf("row %q: want 13 columns", row)
	}
	ns := func(i int) int64 {
		v, err := strconv.ParseInt(x[i], 10, 64)
		if err != nil {
			t.Fatalf("row %q: column %d: %v", row, i, err)
		}
		return v
	}
	if issue1, done, fenced := ns(3), ns(5), ns(9); fenced < issue1 || fenced > done {
		t.Errorf("row %q: fence enqueued at %d, want between the launch's return %d and its completion %d", row, fenced, issue1, done)
	}
}
