package mem

import (
	"bytes"
	"errors"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

func TestNewManagerOptions(t *testing.T) {
	tests := []struct {
		name      string
		gran      uint64
		opts      Options
		wantCode  v1.Code
		wantLimit uint64
		wantSink  uint64 // granules
	}{
		{name: "defaults", gran: testGran, wantLimit: testTotal, wantSink: 1},
		{name: "limit below total", gran: testGran, opts: Options{DeviceMemoryLimit: 8 << 20}, wantLimit: 8 << 20, wantSink: 1},
		{name: "limit above total is clamped", gran: testGran, opts: Options{DeviceMemoryLimit: 1 << 40}, wantLimit: testTotal, wantSink: 1},
		{name: "sink rounded up to granules", gran: testGran, opts: Options{SinkChunk: 3*testGran + 1}, wantLimit: testTotal, wantSink: 4},
		{name: "sink larger than limit", gran: testGran, opts: Options{DeviceMemoryLimit: 1 << 20, SinkChunk: 2 << 20}, wantCode: v1.CodeInvalidArgument},
		{name: "granularity not a power of two", gran: 3 << 16, wantCode: v1.CodeUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewManager(newFakeDevice(tt.gran, testTotal), tt.opts)
			if got := v1.CodeOf(err); got != tt.wantCode {
				t.Fatalf("NewManager: code %v (%v), want %v", got, err, tt.wantCode)
			}
			if err != nil {
				return
			}
			defer m.Close()
			if m.Limit() != tt.wantLimit || m.sinkGran != tt.wantSink {
				t.Errorf("limit %d sink %d granules, want %d and %d", m.Limit(), m.sinkGran, tt.wantLimit, tt.wantSink)
			}
		})
	}
	if _, err := NewManager(nil, Options{}); !errors.Is(err, v1.ErrInvalidArgument) {
		t.Errorf("NewManager(nil): %v, want invalid argument", err)
	}
}

func TestWindowShape(t *testing.T) {
	h := newHarness(t, testTotal, Options{MinWindow: 1 << 20})
	tests := []struct {
		quota, want uint64
	}{
		{0, 128 << 20},       // the 64 MiB device limit, with half again as slack
		{1 << 10, 1 << 20},   // MinWindow
		{5 << 20, 8 << 20},   // 7.5 MiB
		{8 << 20, 16 << 20},  // 12 MiB
		{40 << 20, 64 << 20}, // 60 MiB
	}
	for _, tt := range tests {
		tn := h.m.Tenant("t")
		tn.SetQuota(tt.quota)
		w := h.open(tn)
		if w.Size() != tt.want || uint64(w.Base())%w.Size() != 0 {
			t.Errorf("quota %d: window %#x+%#x, want size %#x, naturally aligned", tt.quota, uint64(w.Base()), w.Size(), tt.want)
		}
		lo, hi := w.GuardRange()
		if lo != w.Base() || hi-lo != testGran {
			t.Errorf("quota %d: initial guard range [%#x, %#x), want one granule at the base", tt.quota, uint64(lo), uint64(hi))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if lo, hi := w.GuardRange(); lo != hi {
			t.Errorf("guard range after Close is [%#x, %#x), want empty", uint64(lo), uint64(hi))
		}
	}
	h.check()
}

func TestAllocKinds(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	w := h.open(h.m.Tenant("a"))
	tests := []struct {
		size      uint64
		flags     AllocFlags
		shareable bool
		charge    uint64
	}{
		{1, 0, false, 256},
		{256, 0, false, 256},
		{257, 0, false, 512},
		{testGran - 1, 0, false, testGran},
		{testGran, 0, true, testGran},
		{testGran + 1, 0, true, 2 * testGran},
		{100, Shareable, true, testGran},
	}
	for _, tt := range tests {
		before, _ := w.Tenant().Usage()
		a := h.alloc(w, tt.size, tt.flags)
		after, _ := w.Tenant().Usage()
		if a.Shareable() != tt.shareable || after-before != tt.charge || a.Size() != tt.size {
			t.Errorf("Alloc(%d, %v): shareable %v charge %d size %d, want %v %d %d", tt.size, tt.flags, a.Shareable(), after-before, a.Size(), tt.shareable, tt.charge, tt.size)
		}
		lo, hi := w.GuardRange()
		if a.Ptr()%allocAlign != 0 || a.Ptr() < lo || a.Ptr()+backend.DevicePtr(a.Size()) > hi {
			t.Errorf("Alloc(%d): %#x not 256-aligned inside guard range [%#x, %#x)", tt.size, uint64(a.Ptr()), uint64(lo), uint64(hi))
		}
		// The memory is usable all through.
		data := bytes.Repeat([]byte{byte(tt.size)}, int(tt.size))
		if err := h.dev.write(a.Ptr(), data); err != nil {
			t.Fatalf("write: %v", err)
		}
		got, _ := h.dev.read(a.Ptr(), tt.size)
		if !bytes.Equal(got, data) {
			t.Errorf("Alloc(%d): read back differs", tt.size)
		}
		h.check()
	}
}

func TestAllocRejects(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	w := h.open(h.m.Tenant("a"))
	tests := []struct {
		name  string
		size  uint64
		flags AllocFlags
		want  error
	}{
		{"zero size", 0, 0, ErrInvalidArgument},
		{"unknown flag", 16, 1 << 7, ErrInvalidArgument},
		{"overflowing size", ^uint64(0) - 5, 0, ErrInvalidArgument},
		{"beyond the device limit", testTotal, 0, ErrOutOfMemory},
	}
	for _, tt := range tests {
		_, err := w.Alloc(tt.size, tt.flags)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Alloc(%d, %#x) = %v, want %v", tt.name, tt.size, tt.flags, err, tt.want)
		}
	}
	if used, _ := w.Tenant().Usage(); used != 0 {
		t.Errorf("usage after refused allocations: %d, want 0", used)
	}
}

// The growth of the guard range, the replacement of sink granules and the
// free of a chunk each cost one SetAccess; a sub-allocation from a slab the
// window holds costs no backend call at all.
func TestSetAccessBatched(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	w := h.open(h.m.Tenant("a"))
	step := func(name string, wantSetAccess int, wantGrow bool, fn func()) {
		t.Helper()
		_, hi0 := w.GuardRange()
		c0 := h.dev.counts().calls
		fn()
		c1 := h.dev.counts().calls
		_, hi1 := w.GuardRange()
		if got := c1.SetAccess - c0.SetAccess; got != wantSetAccess {
			t.Errorf("%s: %d SetAccess calls, want %d", name, got, wantSetAccess)
		}
		if grew := hi1 > hi0; grew != wantGrow {
			t.Errorf("%s: guard range grew %v (%#x to %#x), want %v", name, grew, uint64(hi0), uint64(hi1), wantGrow)
		}
		if hi1 > hi0 {
			if n := uint64(hi1 - w.Base()); n&(n-1) != 0 || n < 2*uint64(hi0-w.Base()) {
				t.Errorf("%s: guard range of %#x bytes, want a power of two at least double", name, n)
			}
		}
		h.check()
	}
	var big, small, small2 *Allocation
	step("first slab fills the initial guard granule", 1, false, func() { small = h.alloc(w, 1000, 0) })
	step("sub-allocation from the slab", 0, false, func() { small2 = h.alloc(w, 1000, 0) })
	if c := h.dev.counts().calls; c.Map+c.Unmap+c.CreateChunk == 0 {
		t.Fatal("no backend calls recorded at all")
	}
	c0 := h.dev.counts().calls
	h.free(small2)
	if c1 := h.dev.counts().calls; c1 != c0 {
		t.Errorf("free of a sub-allocation called the backend: %+v -> %+v", c0, c1)
	}
	step("10-granule allocation grows the range", 1, true, func() { big = h.alloc(w, 10*testGran, 0) })
	step("free maps the sink back", 1, false, func() { h.free(big) })
	step("allocation on sink granules", 1, false, func() { big = h.alloc(w, 3*testGran, 0) })
	step("large growth", 1, true, func() { h.alloc(w, 200*testGran, 0) })
	h.free(small)
	h.check()
}

// With a sink chunk of several granules, growth maps the sink in pieces of
// that size, and an allocation inside a piece replaces it by whole sinks and
// single granules (the driver maps only whole chunks).
func TestLargeSinkChunk(t *testing.T) {
	h := newHarness(t, testTotal, Options{SinkChunk: 4 * testGran})
	w := h.open(h.m.Tenant("a"))
	lo, _ := w.GuardRange()
	if got := h.dev.mappingSizes(lo, lo+backend.DevicePtr(w.Size())); len(got) != 1 || got[0] != 4 {
		t.Fatalf("initial mappings %v, want one 4-granule sink", got)
	}
	a := h.alloc(w, testGran, 0) // replaces granule 0 of the 4-granule sink
	if got := h.dev.mappingSizes(lo, lo+backend.DevicePtr(w.Size())); !equalU64(got, []uint64{1, 1, 1, 1}) {
		t.Errorf("after a 1-granule allocation: mappings %v, want [1 1 1 1]", got)
	}
	b := h.alloc(w, 5*testGran, 0) // granules 1-5: replaces the single sinks, grows to 8 granules
	if got := h.dev.mappingSizes(lo, lo+backend.DevicePtr(w.Size())); !equalU64(got, []uint64{1, 5, 1, 1}) {
		t.Errorf("after a 5-granule allocation: mappings %v, want [1 5 1 1]", got)
	}
	c := h.alloc(w, 8*testGran, 0) // granules 6-13: the range grows to 16, 14 and 15 single sinks
	if got := h.dev.mappingSizes(lo, lo+backend.DevicePtr(w.Size())); !equalU64(got, []uint64{1, 5, 8, 1, 1}) {
		t.Errorf("after an 8-granule allocation: mappings %v, want [1 5 8 1 1]", got)
	}
	h.free(c)
	h.check()
	h.free(a)
	h.free(b)
	h.check()
	if _, hi := w.GuardRange(); hi-lo != 16*testGran {
		t.Errorf("guard range %#x bytes, want 16 granules (it never shrinks)", uint64(hi-lo))
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Quiesce is asked before sink granules inside the guard range are replaced,
// and not for pure growth beyond it.
func TestQuiesceOnlyInsideGuard(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	w := h.open(h.m.Tenant("a"))
	q0 := h.quiesceCount()
	a := h.alloc(w, 4*testGran, 0) // starts on the initial sink granule
	q1 := h.quiesceCount()
	if q1 != q0+1 {
		t.Errorf("allocation over the initial sink granule: %d quiesces, want 1", q1-q0)
	}
	b := h.alloc(w, 8*testGran, 0) // entirely beyond the guard range
	if q2 := h.quiesceCount(); q2 != q1 {
		t.Errorf("allocation beyond the guard range: %d quiesces, want 0", q2-q1)
	}
	h.free(a)
	h.free(b)
	h.check()
}

func TestResolve(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	w := h.open(h.m.Tenant("a"))
	s1 := h.alloc(w, 1000, 0)
	s2 := h.alloc(w, 1000, 0)
	big := h.alloc(w, 3*testGran+5, 0)
	other := h.open(h.m.Tenant("b"))
	att, err := other.Attach(big, false)
	if err != nil {
		t.Fatal(err)
	}
	p := func(a *Allocation, off uint64) backend.DevicePtr { return a.Ptr() + backend.DevicePtr(off) }
	tests := []struct {
		name    string
		w       *Window
		ptr     backend.DevicePtr
		n       uint64
		want    *Allocation
		wantOff uint64
	}{
		{"sub start", w, s1.Ptr(), 1000, s1, 0},
		{"sub inside", w, p(s2, 10), 990, s2, 10},
		{"sub n=0 at last byte", w, p(s2, 999), 0, s2, 999},
		{"sub past end", w, p(s1, 1), 1000, nil, 0},
		{"sub padding after end", w, p(s1, 1000), 1, nil, 0},
		{"straddles two", w, p(s1, 900), 200, nil, 0},
		{"free space in slab", w, p(s2, 1024), 8, nil, 0},
		{"chunk inside", w, p(big, testGran), testGran, big, testGran},
		{"chunk whole", w, big.Ptr(), big.Size(), big, 0},
		{"chunk past size", w, big.Ptr(), big.Size() + 1, nil, 0},
		{"chunk rounding tail", w, p(big, big.Size()), 1, nil, 0},
		{"below window", w, w.Base() - 1, 1, nil, 0},
		{"above window", w, w.Base() + backend.DevicePtr(w.Size()), 1, nil, 0},
		{"overflowing n", w, big.Ptr(), ^uint64(0), nil, 0},
		{"attachment", other, p(att, 7), 8, att, 7},
		{"owner address in receiver", other, big.Ptr(), 1, nil, 0},
	}
	for _, tt := range tests {
		a, off, err := tt.w.Resolve(tt.ptr, tt.n)
		if tt.want == nil {
			if !errors.Is(err, ErrNoAllocation) || v1.CodeOf(err) != v1.CodeInvalidArgument {
				t.Errorf("%s: Resolve = %v, %v; want ErrNoAllocation", tt.name, a, err)
			}
			continue
		}
		if err != nil || a != tt.want || off != tt.wantOff {
			t.Errorf("%s: Resolve = %p+%d, %v; want %p+%d", tt.name, a, off, err, tt.want, tt.wantOff)
		}
	}
}

func TestAttachAliases(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	ta, tb := h.m.Tenant("a"), h.m.Tenant("b")
	wa, wb := h.open(ta), h.open(tb)
	src := h.alloc(wa, 1000, Shareable)
	usedA, _ := ta.Usage()
	rw, err := wb.Attach(src, false)
	if err != nil {
		t.Fatal(err)
	}
	if used, _ := tb.Usage(); used != 0 {
		t.Errorf("receiver charged %d bytes, want 0", used)
	}
	if used, _ := ta.Usage(); used != usedA {
		t.Errorf("owner charged %d after attach, want %d", used, usedA)
	}
	if phys := h.m.Stats().Device.Physical; phys != 2*testGran {
		t.Errorf("physical %d after attach, want the sink and one chunk", phys)
	}
	msg := []byte("written through the owner")
	h.dev.write(src.Ptr(), msg)
	if got, _ := h.dev.read(rw.Ptr(), uint64(len(msg))); !bytes.Equal(got, msg) {
		t.Errorf("read through the attachment: %q, want %q", got, msg)
	}
	back := []byte("and back through the receiver")
	h.dev.write(rw.Ptr()+100, back)
	if got, _ := h.dev.read(src.Ptr()+100, uint64(len(back))); !bytes.Equal(got, back) {
		t.Errorf("read through the owner: %q, want %q", got, back)
	}
	if !rw.Attached() || rw.ReadOnly() || rw.Size() != src.Size() || rw.Window() != wb {
		t.Errorf("attachment: attached %v readOnly %v size %d", rw.Attached(), rw.ReadOnly(), rw.Size())
	}

	ro, err := wb.Attach(src, true)
	if err != nil || !ro.ReadOnly() {
		t.Fatalf("read-only Attach: %v, readOnly %v", err, ro != nil && ro.ReadOnly())
	}
	// Rights narrow only.
	wc := h.open(h.m.Tenant("c"))
	if _, err := wc.Attach(ro, false); !errors.Is(err, ErrReadOnly) || !errors.Is(err, v1.ErrPermissionDenied) {
		t.Errorf("read-write attach of a read-only attachment: %v, want ErrReadOnly", err)
	}
	again, err := wc.Attach(ro, true)
	if err != nil {
		t.Fatalf("read-only attach of a read-only attachment: %v", err)
	}
	if got, _ := h.dev.read(again.Ptr(), uint64(len(msg))); !bytes.Equal(got, msg) {
		t.Errorf("read through a second-hand attachment: %q", got)
	}
	sub := h.alloc(wa, 1000, 0)
	if _, err := wb.Attach(sub, false); !errors.Is(err, ErrNotShareable) || v1.CodeOf(err) != v1.CodeInvalidArgument {
		t.Errorf("attach of a sub-allocation: %v, want ErrNotShareable", err)
	}
	other, _ := NewManager(newFakeDevice(testGran, testTotal), Options{})
	defer other.Close()
	ow, _ := other.OpenWindow(other.Tenant("x"))
	if _, err := ow.Attach(src, false); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("attach across managers: %v", err)
	}
	h.check()
}

// When the owner frees a shared allocation, every attachment is unmapped and
// its granules are backed by the sink again: the receivers' guard ranges stay
// whole, Resolve no longer finds the attachment, and the receiver's Free
// succeeds once.
func TestOwnerFreeRevokesAttachments(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	ta, tb := h.m.Tenant("a"), h.m.Tenant("b")
	wa, wb := h.open(ta), h.open(tb)
	src := h.alloc(wa, 2*testGran, 0)
	att, err := wb.Attach(src, false)
	if err != nil {
		t.Fatal(err)
	}
	h.dev.write(src.Ptr(), []byte("secret"))
	h.free(src)
	h.check()
	if _, _, err := wb.Resolve(att.Ptr(), 1); !errors.Is(err, ErrNoAllocation) {
		t.Errorf("Resolve of a revoked attachment: %v", err)
	}
	if got, err := h.dev.read(att.Ptr(), 6); err != nil || bytes.Equal(got, []byte("secret")) {
		t.Errorf("revoked attachment reads %q, %v: want the sink, no fault", got, err)
	}
	if _, err := wb.Attach(att, false); !errors.Is(err, ErrRevoked) {
		t.Errorf("Attach of a revoked attachment: %v", err)
	}
	if err := att.Free(); err != nil {
		t.Errorf("first Free of a revoked attachment: %v", err)
	}
	if err := att.Free(); !errors.Is(err, ErrFreed) || !errors.Is(err, v1.ErrInvalidHandle) {
		t.Errorf("second Free: %v, want ErrFreed", err)
	}
	if used, _ := ta.Usage(); used != 0 {
		t.Errorf("owner still charged %d", used)
	}
}

// A receiver detaching or closing leaves the owner's allocation intact.
func TestReceiverDetachAndClose(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	wa, wb := h.open(h.m.Tenant("a")), h.open(h.m.Tenant("b"))
	src := h.alloc(wa, testGran, 0)
	h.dev.write(src.Ptr(), []byte("kept"))
	att, _ := wb.Attach(src, false)
	h.free(att)
	att2, _ := wb.Attach(src, true)
	if err := wb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := att2.Free(); err != nil {
		t.Errorf("Free of an attachment of a closed window: %v", err)
	}
	if got, err := h.dev.read(src.Ptr(), 4); err != nil || string(got) != "kept" {
		t.Errorf("owner reads %q, %v after receivers left", got, err)
	}
	if c := h.m.Candidates(); len(c) != 1 || c[0].Shared {
		t.Errorf("candidates %+v, want the owner's chunk, no longer shared", c)
	}
	h.free(src)
	h.check()
}

func TestQuotaAcrossWindows(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	tn := h.m.Tenant("a")
	tn.SetQuota(4 * testGran)
	w1, w2 := h.open(tn), h.open(tn)
	a := h.alloc(w1, 2*testGran, 0)
	b := h.alloc(w2, testGran, Shareable)
	c := h.alloc(w2, testGran/2, 0)
	if used, quota := tn.Usage(); used != 3*testGran+testGran/2 || quota != 4*testGran {
		t.Fatalf("usage %d/%d", used, quota)
	}
	over := []struct {
		name  string
		w     *Window
		size  uint64
		flags AllocFlags
	}{
		{"chunk path, other window", w1, testGran, 0},
		{"shareable path", w2, 1, Shareable},
		{"sub-allocation path", w1, testGran/2 + 1, 0},
	}
	for _, tt := range over {
		_, err := tt.w.Alloc(tt.size, tt.flags)
		if !errors.Is(err, ErrQuotaExceeded) || !errors.Is(err, v1.ErrQuotaExceeded) || v1.CodeOf(err) != v1.CodeQuotaExceeded {
			t.Errorf("%s: %v, want quota exceeded", tt.name, err)
		}
	}
	// Exactly up to the quota is fine; attachments cost the receiver nothing.
	d := h.alloc(w1, testGran/2, 0)
	if _, err := w2.Attach(a, false); err != nil {
		t.Errorf("attach at full quota: %v", err)
	}
	if free, total := tn.MemoryInfo(); free != 0 || total != 4*testGran {
		t.Errorf("MemoryInfo = %d, %d; want 0 free of the quota", free, total)
	}
	// Quotas change at run time.
	tn.SetQuota(0)
	e := h.alloc(w1, testGran, 0)
	tn.SetQuota(testGran)
	if _, err := w1.Alloc(256, 0); !errors.Is(err, ErrQuotaExceeded) {
		t.Errorf("after lowering the quota below usage: %v", err)
	}
	for _, x := range []*Allocation{a, b, c, d, e} {
		h.free(x)
	}
	if used, _ := tn.Usage(); used != 0 {
		t.Errorf("usage after freeing everything: %d", used)
	}
	if st := h.m.Stats(); len(st.Tenants) != 1 || st.Tenants[0] != (TenantStats{Name: "a", Used: 0, Quota: testGran, Windows: 2}) {
		t.Errorf("Stats().Tenants = %+v", st.Tenants)
	}
}

func TestDeviceLimit(t *testing.T) {
	const limit = 8 * testGran // the sink takes one granule
	h := newHarness(t, testTotal, Options{DeviceMemoryLimit: limit, PoolLimit: limit})
	w := h.open(h.m.Tenant("a"))
	a := h.alloc(w, 4*testGran, 0)
	b := h.alloc(w, 3*testGran, 0)
	for _, size := range []uint64{testGran, 1} {
		_, err := w.Alloc(size, 0)
		if !errors.Is(err, ErrOutOfMemory) || v1.CodeOf(err) != v1.CodeOutOfMemory {
			t.Errorf("Alloc(%d) at the device limit: %v, want out of memory", size, err)
		}
	}
	// Freed chunks go to the pool; a differently sized allocation trims it.
	h.free(a)
	h.free(b)
	if st := h.m.Stats().Device; st.Pooled != 7*testGran || st.Physical != limit {
		t.Errorf("after frees: %+v, want 7 granules pooled", st)
	}
	c := h.alloc(w, 6*testGran, 0)
	if st := h.m.Stats().Device; st.Pooled > testGran || st.Physical > limit {
		t.Errorf("after an allocation under pressure: %+v", st)
	}
	h.free(c)
	// The backend's own OOM (memory taken by someone else) is reported as such.
	h.dev.fail = func(op string) error {
		if op == "CreateChunk" {
			return backend.ErrOutOfMemory
		}
		return nil
	}
	if _, err := w.Alloc(7*testGran, 0); v1.CodeOf(err) != v1.CodeOutOfMemory {
		t.Errorf("backend OOM: %v", err)
	}
	h.dev.fail = nil
	if used, _ := w.Tenant().Usage(); used != 0 {
		t.Errorf("usage after failed allocations: %d", used)
	}
	h.check()
}

func TestPoolReuse(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	w := h.open(h.m.Tenant("a"))
	h.free(h.alloc(w, 4*testGran, 0))
	c0 := h.dev.counts().calls.CreateChunk
	for range 10 {
		h.free(h.alloc(w, 4*testGran, 0))
	}
	if got := h.dev.counts().calls.CreateChunk - c0; got != 0 {
		t.Errorf("10 alloc/free cycles created %d chunks, want 0 (pool)", got)
	}
	if err := h.m.Trim(); err != nil {
		t.Fatal(err)
	}
	if st := h.m.Stats().Device; st.Pooled != 0 || st.Chunks != 1 || st.Physical != testGran {
		t.Errorf("after Trim: %+v, want the sink alone", st)
	}
}

// Memory that held another tenant's data is zeroed before a new tenant gets
// it; the same tenant's own memory is not scrubbed again.
func TestScrubAcrossTenants(t *testing.T) {
	h := newHarness(t, testTotal, Options{FreshChunksZeroed: true})
	wa, wb := h.open(h.m.Tenant("a")), h.open(h.m.Tenant("b"))
	secret := bytes.Repeat([]byte{0xAB}, 2*testGran)

	a := h.alloc(wa, 2*testGran, 0)
	h.dev.write(a.Ptr(), secret)
	h.free(a)
	a = h.alloc(wa, 2*testGran, 0) // same tenant, from the pool
	if s := h.m.Stats().Device.Scrubbed; s != 0 {
		t.Errorf("reuse by the same tenant scrubbed %d bytes", s)
	}
	h.free(a)
	b := h.alloc(wb, 2*testGran, 0)
	if got, _ := h.dev.read(b.Ptr(), 2*testGran); !bytes.Equal(got, make([]byte, 2*testGran)) {
		t.Error("tenant b reads tenant a's data")
	}
	if s := h.m.Stats().Device.Scrubbed; s != 2*testGran {
		t.Errorf("scrubbed %d bytes, want %d", s, 2*testGran)
	}
	// A shared chunk holds both tenants' data: scrubbed even for its owner.
	h.free(b)
	c := h.alloc(wa, 2*testGran, 0)
	att, _ := wb.Attach(c, false)
	h.dev.write(att.Ptr(), secret)
	h.free(c)
	c = h.alloc(wa, 2*testGran, 0)
	if got, _ := h.dev.read(c.Ptr(), 2*testGran); !bytes.Equal(got, make([]byte, 2*testGran)) {
		t.Error("owner reads the receiver's writes after a new allocation")
	}
	// Fresh chunks are scrubbed unless the backend zeroes them.
	h2 := newHarness(t, testTotal, Options{})
	w2 := h2.open(h2.m.Tenant("a"))
	h2.alloc(w2, 1000, 0)
	h2.alloc(w2, 3*testGran, 0)
	if s := h2.m.Stats().Device.Scrubbed; s != 4*testGran {
		t.Errorf("fresh chunks: scrubbed %d, want %d", s, 4*testGran)
	}
}

func TestFreeAndCloseReturnEverything(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	base := h.dev.counts()
	ta, tb := h.m.Tenant("a"), h.m.Tenant("b")
	wa, wb := h.open(ta), h.open(tb)
	var as []*Allocation
	for i := range 20 {
		as = append(as, h.alloc(wa, uint64(i+1)*5000, 0), h.alloc(wb, uint64(i+1)*700, Shareable))
	}
	att, err := wb.Attach(as[26], false) // wb holds an attachment of wa's (70000 bytes: own chunk)
	if err != nil {
		t.Fatal(err)
	}
	att2, err := wa.Attach(as[5], true) // and wa one of wb's
	if err != nil {
		t.Fatal(err)
	}
	if err := wa.Close(); err != nil {
		t.Fatal(err)
	}
	if used, _ := ta.Usage(); used != 0 {
		t.Errorf("tenant a usage after Close: %d", used)
	}
	if err := wa.Close(); !errors.Is(err, ErrWindowClosed) {
		t.Errorf("second Close: %v", err)
	}
	if _, err := wa.Alloc(1, 0); !errors.Is(err, ErrWindowClosed) {
		t.Errorf("Alloc on a closed window: %v", err)
	}
	if _, err := wa.Attach(as[1], false); !errors.Is(err, ErrWindowClosed) {
		t.Errorf("Attach into a closed window: %v", err)
	}
	for _, x := range []*Allocation{as[0], as[26], att, att2} {
		if err := x.Free(); err != nil {
			t.Errorf("Free after Close: %v", err)
		}
	}
	h.check()
	if err := h.m.Close(); err != nil {
		t.Fatal(err)
	}
	if used, _ := tb.Usage(); used != 0 {
		t.Errorf("tenant b usage after manager Close: %d", used)
	}
	if c := h.dev.counts(); c.chunks != base.chunks-1 || c.mappings != 0 || c.reservations != 0 || c.used != 0 {
		t.Errorf("device after Close: %+v, want nothing held", c)
	}
	if _, err := h.m.OpenWindow(ta); !errors.Is(err, ErrClosed) {
		t.Errorf("OpenWindow after Close: %v", err)
	}
	if err := h.m.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second manager Close: %v", err)
	}
}

func TestCandidatesLRU(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	wa, wb := h.open(h.m.Tenant("a")), h.open(h.m.Tenant("b"))
	a := h.alloc(wa, testGran, 0)
	b := h.alloc(wb, testGran, 0)
	s := h.alloc(wb, 100, 0)
	wb.Attach(a, false)
	if _, _, err := wa.Resolve(a.Ptr(), 1); err != nil { // a used last
		t.Fatal(err)
	}
	c := h.m.Candidates()
	if len(c) != 3 || c[0].Ptr != b.Ptr() || !c[1].Slab || c[1].Ptr != s.Ptr() || c[2].Ptr != a.Ptr() || !c[2].Shared || c[2].Tenant != "a" {
		t.Fatalf("candidates %+v: want b, the slab, then a (shared)", c)
	}
	wb.Touch() // b's window ran: its chunks are recent now
	if c := h.m.Candidates(); c[0].Ptr != a.Ptr() || c[0].Window != wa.ID() {
		t.Errorf("after Touch: %+v, want a first", c)
	}
}

func TestDoubleFree(t *testing.T) {
	h := newHarness(t, testTotal, Options{})
	w := h.open(h.m.Tenant("a"))
	for _, size := range []uint64{100, 3 * testGran} {
		a := h.alloc(w, size, 0)
		h.free(a)
		if err := a.Free(); !errors.Is(err, ErrFreed) {
			t.Errorf("second Free of %d bytes: %v", size, err)
		}
	}
	var nilAlloc *Allocation
	if err := nilAlloc.Free(); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Free(nil): %v", err)
	}
	if _, err := h.m.OpenWindow(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("OpenWindow(nil): %v", err)
	}
}

// A backend failure at any point of an Alloc or Free leaves the window
// consistent: the guard range backed, usage unchanged, the other allocations
// intact. Each case fails the k-th call of one operation, for every k.
func TestBackendFailureRollsBack(t *testing.T) {
	type step struct {
		name string
		// do runs the operation; it returns what to free afterwards.
		do func(h *harness, w *Window, keep *Allocation) (*Allocation, error)
	}
	steps := []step{
		{"alloc on sink granules", func(h *harness, w *Window, _ *Allocation) (*Allocation, error) { return w.Alloc(2*testGran, 0) }},
		{"alloc growing the guard range", func(h *harness, w *Window, _ *Allocation) (*Allocation, error) { return w.Alloc(40*testGran, 0) }},
		{"new slab", func(h *harness, w *Window, _ *Allocation) (*Allocation, error) { return w.Alloc(100, 0) }},
		{"attach", func(h *harness, w *Window, keep *Allocation) (*Allocation, error) { return w.Attach(keep, false) }},
		{"free", func(h *harness, w *Window, _ *Allocation) (*Allocation, error) {
			f := h.dev.fail
			h.dev.fail = nil // not while allocating
			a := h.alloc(w, 3*testGran, 0)
			h.dev.fail = f
			if err := a.Free(); err != nil {
				return a, err // a failed Free leaves the allocation live
			}
			return nil, nil
		}},
	}
	for _, op := range []string{"CreateChunk", "Map", "Unmap", "SetAccess", "Memset"} {
		for _, st := range steps {
			t.Run(op+"/"+st.name, func(t *testing.T) {
				for k := 1; ; k++ {
					h := newHarness(t, testTotal, Options{})
					w := h.open(h.m.Tenant("a"))
					keep := h.alloc(w, 2*testGran, 0)
					h.free(h.alloc(w, 2*testGran, 0)) // sink granules inside the guard range
					_, hi0 := w.GuardRange()
					calls := 0
					h.dev.fail = func(o string) error {
						if o == op {
							if calls++; calls == k {
								return backend.ErrContextLost
							}
						}
						return nil
					}
					a, err := st.do(h, w, keep)
					h.dev.fail = nil
					if calls >= k && !errors.Is(err, backend.ErrContextLost) {
						t.Errorf("k=%d: %v, want the backend's error", k, err)
					}
					if calls < k && err != nil {
						t.Errorf("k=%d: %v with no failure injected", k, err)
					}
					h.check()
					if a != nil {
						h.free(a)
					}
					h.check()
					if _, hi := w.GuardRange(); hi < hi0 {
						t.Errorf("k=%d: guard range shrank", k)
					}
					if used, _ := w.Tenant().Usage(); used != 2*testGran {
						t.Errorf("k=%d: usage %d, want %d", k, used, 2*testGran)
					}
					if got, err := h.dev.read(keep.Ptr(), 1); err != nil || len(got) != 1 {
						t.Errorf("k=%d: surviving allocation unreadable: %v", k, err)
					}
					// The window still works, and closes cleanly.
					h.free(h.alloc(w, 5*testGran, 0))
					h.free(keep)
					if err := w.Close(); err != nil {
						t.Errorf("k=%d: Close: %v", k, err)
					}
					if c := h.dev.counts(); c.mappings != 0 || c.reservations != 0 {
						t.Errorf("k=%d: %d mappings, %d reservations left after Close", k, c.mappings, c.reservations)
					}
					h.m.Close()
					if calls < k { // the k-th call never came: every point was tried
						break
					}
				}
			})
		}
	}
}
