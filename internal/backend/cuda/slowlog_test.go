package cuda

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// With $GPUOS_CUDA_SLOW_LOG set, driver calls at least $GPUOS_CUDA_SLOW
// long are logged with their start and duration (here every call: the
// threshold is 1ns), synchronizing calls excepted, and an event
// synchronization's return to Go is logged as its own span. In a child
// process: the log is process-wide.
func TestFakeSlowLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "slow.csv")
	runChild(t, "TestFakeSlowLogChild", LibraryEnv+"="+fakeLib(t, "fake"), SlowLogEnv+"="+log, SlowThresholdEnv+"=1ns")
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, ",")
		if len(f) != 3 {
			t.Fatalf("line %q: want name,start,duration", line)
		}
		at, err1 := strconv.ParseInt(f[1], 10, 64)
		_, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || time.Since(time.Unix(0, at)) > time.Hour {
			t.Fatalf("line %q: bad times", line)
		}
		seen[f[0]] = true
	}
	for _, want := range []string{"cuStreamCreateWithPriority", "cuLaunchKernel", "cuEventRecord", "go:return(cuEventSynchronize)"} {
		if !seen[want] {
			t.Errorf("no %s in the log; logged: %v", want, seen)
		}
	}
	for _, never := range []string{"cuEventSynchronize", "cuStreamSynchronize"} {
		if seen[never] {
			t.Errorf("%s logged: synchronizing calls wait by design", never)
		}
	}
}

func TestFakeSlowLogChild(t *testing.T) {
	if !isChild("TestFakeSlowLogChild") {
		t.Skip("runs in its own process, started by TestFakeSlowLog")
	}
	b, err := Open()
	must(t, err)
	d, err := b.open(0)
	must(t, err)
	m, err := d.LoadModule([]byte(fakePTX))
	must(t, err)
	f, err := m.Function("vecadd")
	must(t, err)
	st, err := d.NewStream(0)
	must(t, err)
	p := allocFake(t, d, 4)
	params := make([]byte, 28)
	for i := range 3 {
		binary.LittleEndian.PutUint64(params[8*i:], uint64(p))
	}
	must(t, st.Launch(f, backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}, params))
	ev, err := d.NewEvent(0)
	must(t, err)
	must(t, st.Record(ev))
	must(t, ev.Synchronize())
	must(t, st.Synchronize())
	time.Sleep(300 * time.Millisecond) // the log is drained every 100 ms
}
