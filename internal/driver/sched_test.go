package driver

import (
	"os"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/sched"
)

func simPriority(t *testing.T, st backend.Stream) int {
	t.Helper()
	if w, ok := st.(*watchStream); ok {
		st = w.Stream
	}
	s, ok := st.(*sim.Stream)
	if !ok {
		t.Fatalf("stream %T is not the sim's", st)
	}
	return s.Priority()
}

// TestStreamPrioritiesFollowClass: a high-class tenant's streams get the
// device's greatest priority whatever they ask, a low-class tenant's the
// least, a normal one's what it asks short of the greatest.
func TestStreamPrioritiesFollowClass(t *testing.T) {
	td := newTestDriver(t, 64<<20, Options{})
	for _, tc := range []struct {
		tenant      string
		class       sched.Class
		ask         int32
		def, stream int
	}{
		{"high", sched.ClassHigh, 0, sim.GreatestStreamPriority, sim.GreatestStreamPriority},
		{"low", sched.ClassLow, -5, sim.LeastStreamPriority, sim.LeastStreamPriority},
		{"normal", sched.ClassNormal, -5, 0, sim.GreatestStreamPriority + 1},
		{"normal2", sched.ClassNormal, -2, 0, -2},
	} {
		if err := td.d.sched.SetShare(tc.tenant, sched.Share{Compute: 1, Copy: 1, Class: tc.class, ClassSet: true}); err != nil {
			t.Fatal(err)
		}
		ts := td.session(tc.tenant, 0)
		if p := simPriority(t, ts.s.stream.st); p != tc.def {
			t.Errorf("%s: default stream priority %d, want %d", tc.tenant, p, tc.def)
		}
		var sc v1.StreamCreated
		ts.must(&v1.CreateStream{Priority: tc.ask}, &sc)
		obj, err := ts.s.streamOf(sc.Handle)
		if err != nil {
			t.Fatal(err)
		}
		if p := simPriority(t, obj.st); p != tc.stream {
			t.Errorf("%s: stream asked at %d got %d, want %d", tc.tenant, tc.ask, p, tc.stream)
		}
	}
}

// TestSetShareControl: SetShare changes only the fields it names and checks
// their values; TenantStats reports the result.
func TestSetShareControl(t *testing.T) {
	td := newTestDriver(t, 64<<20, Options{})
	d := td.d
	must := func(m *v1.SetShare) {
		t.Helper()
		if _, ok, err := d.schedControl(m); !ok || err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
	}
	must(&v1.SetShare{Tenant: "x", Fields: v1.ShareCompute | v1.ShareCopy, Compute: 4, Copy: 2})
	must(&v1.SetShare{Tenant: "x", Fields: v1.ShareClass, Class: 1})
	sh, _ := d.sched.Share("x")
	if sh.Compute != 4 || sh.Copy != 2 || sh.Class != sched.ClassHigh || !sh.ClassSet {
		t.Errorf("share %+v", sh)
	}
	for _, bad := range []*v1.SetShare{
		{Tenant: "", Fields: v1.ShareCompute, Compute: 1},
		{Tenant: "x", Fields: v1.ShareCompute, Compute: 0},
		{Tenant: "x", Fields: v1.ShareCopy, Copy: 1 << 21},
		{Tenant: "x", Fields: v1.ShareClass, Class: 2},
	} {
		if _, _, err := d.schedControl(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	reply, _, _ := d.schedControl(&v1.TenantStats{})
	var found bool
	for _, s := range reply.(*v1.Tenants).Tenants {
		if s.Name == "x" {
			found = s.Compute == 4 && s.Copy == 2 && s.Class == 1 && s.ClassSet
		}
	}
	if !found {
		t.Errorf("TenantStats does not show x as set: %+v", reply)
	}
	reply, _, _ = d.schedControl(&v1.PolicyList{})
	if p := reply.(*v1.Policies); p.Active != "fair" || p.Fallback != "fair" || len(p.Policies) != 4 {
		t.Errorf("PolicyList %+v", p)
	}
	if _, _, err := d.schedControl(&v1.PolicyUse{Name: "priority"}); err != nil || d.sched.Active() != "priority" {
		t.Errorf("PolicyUse priority: %v, active %s", err, d.sched.Active())
	}
}

func simSMs(t *testing.T, st backend.Stream) [2]int {
	t.Helper()
	if w, ok := st.(*watchStream); ok {
		st = w.Stream
	}
	s, ok := st.(*sim.Stream)
	if !ok {
		t.Fatalf("stream %T is not the sim's", st)
	}
	first, end := s.SMs()
	return [2]int{first, end}
}

// TestReservedSMs: with SMs reserved for the high class (reserve_sms), every
// stream of a tenant of another class is created in the partition of the
// rest, and a high-class tenant's streams keep the whole device. A backend
// that cannot partition leaves the reserve off and serves as before.
func TestReservedSMs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		concurrent bool // the sim's SM model; without it the sim cannot partition
		want       map[string][2]int
	}{
		{"partitioned", true, map[string][2]int{"hp": {0, 132}, "nm": {8, 132}, "be": {8, 132}}},
		{"unsupported", false, map[string][2]int{"hp": {0, 132}, "nm": {0, 132}, "be": {0, 132}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be := sim.New(sim.Options{Memory: 64 << 20, SMs: 132, ConcurrentKernels: tc.concurrent})
			td := newDriverOn(t, be, Options{ReserveSMs: 1, Sched: sched.Options{Policy: "priority"}})
			if got := td.d.reserved != nil; got != tc.concurrent {
				t.Fatalf("reserve in effect: %v, want %v", got, tc.concurrent)
			}
			if got := td.d.sched.HighClassReserved(); got != tc.concurrent {
				t.Errorf("scheduler told the high class has SMs of its own: %v, want %v", got, tc.concurrent)
			}
			for name, class := range map[string]sched.Class{"hp": sched.ClassHigh, "nm": sched.ClassNormal, "be": sched.ClassLow} {
				if err := td.d.sched.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range []string{"hp", "nm", "be"} {
				ts := td.session(name, 0)
				if got := simSMs(t, ts.s.stream.st); got != tc.want[name] {
					t.Errorf("%s: default stream on SMs %v, want %v", name, got, tc.want[name])
				}
				var sc v1.StreamCreated
				ts.must(&v1.CreateStream{}, &sc)
				obj, err := ts.s.streamOf(sc.Handle)
				if err != nil {
					t.Fatal(err)
				}
				if got := simSMs(t, obj.st); got != tc.want[name] {
					t.Errorf("%s: created stream on SMs %v, want %v", name, got, tc.want[name])
				}
				ts.must(&v1.Release{Handle: sc.Handle}, nil)
			}
		})
	}
}

// TestHighClassRingsPoll: a high-class session's rings poll for
// HighClassSpin, and the driver advises its client to do the same and
// watches them with a second goroutine as long (hedged serving, on demand;
// always with $GPUOS_HEDGE=always; not with $GPUOS_HEDGE=0); other classes
// keep the default (no advice, no hedge).
// $GPUOS_RING_SPIN, when set, rules every session (not tested here: it is
// read once per process).
func TestHighClassRingsPoll(t *testing.T) {
	if ring.DefaultSpin() <= 0 || os.Getenv(ring.SpinEnv) != "" {
		t.Skip("rings do not poll here (one CPU) or $GPUOS_RING_SPIN is set")
	}
	td := newTestDriver(t, 64<<20, Options{Sched: sched.Options{Policy: "priority"}})
	for name, want := range map[string]uint64{"hp": uint64(HighClassSpin), "nm": 0, "be": 0} {
		class := map[string]sched.Class{"hp": sched.ClassHigh, "nm": sched.ClassNormal, "be": sched.ClassLow}[name]
		if err := td.d.sched.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
			t.Fatal(err)
		}
		ts := td.session(name, 0)
		if ro := ts.useRings(); ro.SpinNs != want {
			t.Errorf("%s: RingOpened.SpinNs = %d, want %d", name, ro.SpinNs, want)
		}
		if have := td.d.hedge(ts.s.tenant); have != time.Duration(want) || hedgeAlways() {
			t.Errorf("%s: hedge %v (always: %v) by default, want %v on demand", name, have, hedgeAlways(), time.Duration(want))
		}
		for range 100 { // the rings work, hedged or not
			ts.must(&v1.Synchronize{}, nil)
		}
		t.Setenv(HedgeEnv, "always")
		if have := td.d.hedge(ts.s.tenant); have != time.Duration(want) || !hedgeAlways() {
			t.Errorf("%s: with %s=always, hedge %v (always: %v), want %v always", name, HedgeEnv, have, hedgeAlways(), time.Duration(want))
		}
		ts = td.session(name, 0) // a session whose helper watches always (high class)
		ts.useRings()
		for range 100 {
			ts.must(&v1.Synchronize{}, nil)
		}
		t.Setenv(HedgeEnv, "0")
		if have := td.d.hedge(ts.s.tenant); have != 0 {
			t.Errorf("%s: with %s=0, hedge %v, want 0", name, HedgeEnv, have)
		}
		ts = td.session(name, 0) // a session served without a hedge
		ts.useRings()
		for range 100 {
			ts.must(&v1.Synchronize{}, nil)
		}
		os.Unsetenv(HedgeEnv)
	}
}

// $GPUOS_HEDGE_DELAY sets how long a hedged request waits unread before
// the helper serves it; anything but a positive duration leaves the default.
func TestHedgeDelayEnv(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  time.Duration
	}{{"", 0}, {"100us", 100 * time.Microsecond}, {"1ms", time.Millisecond}, {"0", 0}, {"-5us", 0}, {"fast", 0}} {
		if got := hedgeDelayOf(tt.value); got != tt.want {
			t.Errorf("%s=%q: %v, want %v", HedgeDelayEnv, tt.value, got, tt.want)
		}
	}
}
