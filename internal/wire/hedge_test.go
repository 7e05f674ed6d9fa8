package wire

import (
	"testing"
	"time"
)

// The helper goes on watching after a spin with nothing stale only if told
// to watch always or, on demand, within hedgeActive of Serve's goroutine's
// latest gap of over hedgeStall between two looks; never while that
// goroutine waits in the transport's own way.
func TestHedgeWatchesOnDemand(t *testing.T) {
	now := func() time.Duration { return time.Since(hedgeEpoch) }
	for _, tt := range []struct {
		name    string
		always  bool
		gap     time.Duration // between the last two looks (0: one look)
		waiting bool
		want    bool
	}{
		{"on demand, no look yet", false, 0, false, false},
		{"on demand, looks close together", false, hedgeStall / 2, false, false},
		{"on demand, a gap", false, 2 * hedgeStall, false, true},
		{"on demand, a gap, then waiting", false, 2 * hedgeStall, true, false},
		{"always", true, 0, false, true},
		{"always, waiting", true, 0, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &hedge{always: tt.always, wake: make(chan struct{}, 1)}
			if tt.gap > 0 {
				h.lastLook = now() - tt.gap
				h.primaryLook()
			}
			h.waiting.Store(tt.waiting)
			if got := h.watching(); got != tt.want {
				t.Errorf("watching() = %v, want %v", got, tt.want)
			}
			if tt.gap > hedgeStall && len(h.wake) != 1 {
				t.Error("a gap did not wake the helper")
			}
		})
	}
	// The watch ends hedgeActive after the gap.
	h := &hedge{wake: make(chan struct{}, 1)}
	h.lastLook = now() - 2*hedgeStall
	h.primaryLook()
	h.activeUntil.Store(int64(now() - time.Nanosecond))
	if h.watching() {
		t.Error("watching after hedgeActive had passed")
	}
}
