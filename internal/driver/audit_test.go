package driver

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/backend/sim"
)

// The hot-path sampler lets a burst of auditBurst through, then one event
// per 1/auditPerSecond whatever the rate, spread over each second rather
// than its first part; every event it holds back is counted, and handed to
// the next one let through.
func TestAuditRateLimit(t *testing.T) {
	var r rateLimit
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	const events = 2000 // 2 s at 1 kHz
	var allowed []time.Duration
	var reported uint64
	for i := range events {
		at := time.Duration(i) * time.Millisecond
		if ok, sup := r.allow(start.Add(at)); ok {
			allowed = append(allowed, at)
			reported += sup
		}
	}
	if have, want := len(allowed), auditBurst+2*auditPerSecond; have < want-1 || have > want+1 {
		t.Errorf("%d of %d events let through in 2 s, want %d±1", have, events, want)
	}
	if have := uint64(len(allowed)) + reported + r.suppressed; have != events {
		t.Errorf("%d let through + %d reported suppressed + %d pending = %d, want %d", len(allowed), reported, r.suppressed, have, events)
	}
	for i := auditBurst + 1; i < len(allowed); i++ {
		if gap := allowed[i] - allowed[i-1]; gap < 9*time.Millisecond || gap > 11*time.Millisecond {
			t.Fatalf("events %d and %d let through %v apart, want about %v", i-1, i, gap, time.Second/auditPerSecond)
		}
	}
	late := 0 // in the second half of a second
	for _, at := range allowed {
		if at%time.Second >= 500*time.Millisecond {
			late++
		}
	}
	if late < auditPerSecond/2 {
		t.Errorf("%d events let through in the second halves of the seconds, want about %d", late, auditPerSecond)
	}
	// Idle, the bucket refills to the burst and no further.
	r.allow(start.Add(time.Hour))
	n := 0
	for i := range 100 {
		if ok, _ := r.allow(start.Add(time.Hour + time.Duration(i)*time.Microsecond)); ok {
			n++
		}
	}
	if n != auditBurst-1 {
		t.Errorf("after an hour idle, %d of a burst of 100 let through after the first, want %d", n, auditBurst-1)
	}
}

// A session's launches reach the audit log sampled: each record names its
// kernel and grid, and the counts of those held back add up with those
// logged to every launch.
func TestLaunchesAudited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	td := newDriverOn(t, sim.New(sim.Options{}), Options{Audit: al})
	ts := td.session("a", 0)
	k := ts.emptyKernel()
	const launches = 300
	launch := &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{32, 1, 1}}
	for range launches {
		if err := ts.rpc.Send(launch); err != nil {
			t.Fatal(err)
		}
	}
	ts.must(&v1.Synchronize{}, nil)
	if err := al.Flush(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := audit.NewReader(f)
	logged, suppressed := 0, 0
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != audit.KindLaunch {
			continue
		}
		logged++
		if ev.Detail["kernel"] != "empty" || ev.Tenant != "a" {
			t.Errorf("launch record %+v, want kernel empty of tenant a", ev)
		}
		if n, ok := ev.Detail["suppressed_before"].(float64); ok {
			suppressed += int(n)
		}
	}
	if logged < auditBurst || logged >= launches {
		t.Errorf("%d of %d launches logged, want at least the burst (%d) and fewer than all", logged, launches, auditBurst)
	}
	ts.s.auditLimit.mu.Lock()
	pending := int(ts.s.auditLimit.suppressed)
	ts.s.auditLimit.mu.Unlock()
	if logged+suppressed+pending != launches {
		t.Errorf("%d logged + %d counted before them + %d since = %d, want %d", logged, suppressed, pending, logged+suppressed+pending, launches)
	}
}
