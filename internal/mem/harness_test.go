package mem

import (
	"fmt"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

const (
	testGran  = 64 << 10
	testTotal = 64 << 20
)

// harness runs a Manager on a fakeDevice and checks, as the manager works,
// that no granule of a running window's guard range is ever unmapped: every
// Unmap inside a guard range must happen while that window is quiesced, and
// when it resumes, its whole guard range must be mapped and accessible.
type harness struct {
	t   testing.TB
	dev *fakeDevice
	m   *Manager

	// Guarded by dev.mu.
	windows    []*Window
	quiesced   map[*Window]int
	quiesces   int
	violations []string
}

func newHarness(t testing.TB, total uint64, opts Options) *harness {
	t.Helper()
	dev := newFakeDevice(testGran, total)
	h := &harness{t: t, dev: dev, quiesced: map[*Window]int{}}
	if opts.Quiesce == nil {
		opts.Quiesce = h.quiesce
	}
	dev.beforeUnmap = h.checkUnmap
	m, err := NewManager(dev, opts)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	h.m = m
	t.Cleanup(func() {
		h.dev.mu.Lock()
		defer h.dev.mu.Unlock()
		for _, v := range h.violations {
			t.Errorf("backing invariant: %s", v)
		}
	})
	return h
}

func (h *harness) quiesce(w *Window) (func(), error) {
	h.dev.mu.Lock()
	h.quiesced[w]++
	h.quiesces++
	h.dev.mu.Unlock()
	return func() {
		h.dev.mu.Lock()
		defer h.dev.mu.Unlock()
		h.quiesced[w]--
		lo, hi := w.GuardRange()
		if err := h.dev.backedLocked(lo, hi); err != nil && h.quiesced[w] == 0 {
			h.violations = append(h.violations, fmt.Sprintf("window %d resumed: %v", w.ID(), err))
		}
	}, nil
}

// checkUnmap runs with dev.mu held.
func (h *harness) checkUnmap(ptr backend.DevicePtr, size uint64) {
	end := ptr + backend.DevicePtr(size)
	for _, w := range h.windows {
		lo, hi := w.GuardRange()
		if ptr < hi && lo < end && h.quiesced[w] == 0 {
			h.violations = append(h.violations, fmt.Sprintf("unmap [%#x, %#x) inside running window %d's guard range [%#x, %#x)", uint64(ptr), uint64(end), w.ID(), uint64(lo), uint64(hi)))
		}
	}
}

func (h *harness) open(t *Tenant) *Window {
	h.t.Helper()
	w, err := h.m.OpenWindow(t)
	if err != nil {
		h.t.Fatalf("OpenWindow(%q): %v", t.Name(), err)
	}
	h.dev.mu.Lock()
	h.windows = append(h.windows, w)
	h.dev.mu.Unlock()
	return w
}

// check asserts the backing invariant of every window not quiesced now.
func (h *harness) check() {
	h.t.Helper()
	for _, err := range h.backingErrors() {
		h.t.Error(err)
	}
}

func (h *harness) backingErrors() []error {
	h.dev.mu.Lock()
	defer h.dev.mu.Unlock()
	var errs []error
	for _, w := range h.windows {
		if h.quiesced[w] > 0 {
			continue
		}
		lo, hi := w.GuardRange()
		if err := h.dev.backedLocked(lo, hi); err != nil {
			errs = append(errs, fmt.Errorf("window %d: %w", w.ID(), err))
		}
	}
	return errs
}

func (h *harness) alloc(w *Window, size uint64, flags AllocFlags) *Allocation {
	h.t.Helper()
	a, err := w.Alloc(size, flags)
	if err != nil {
		h.t.Fatalf("Alloc(%d, %v): %v", size, flags, err)
	}
	return a
}

func (h *harness) free(a *Allocation) {
	h.t.Helper()
	if err := a.Free(); err != nil {
		h.t.Fatalf("Free: %v", err)
	}
}

func (h *harness) quiesceCount() int {
	h.dev.mu.Lock()
	defer h.dev.mu.Unlock()
	return h.quiesces
}
