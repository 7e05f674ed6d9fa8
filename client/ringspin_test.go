package client

import (
	"os"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/ring"
)

// The rings poll for what the program chose, else for the driver's advice
// (a latency-critical session's), else for the default; advice beyond a
// second is not taken.
func TestRingSpin(t *testing.T) {
	if os.Getenv(ring.SpinEnv) != "" {
		t.Skip("$GPUOS_RING_SPIN is set: it rules")
	}
	for _, tt := range []struct {
		chosen  time.Duration
		advised uint64
		want    time.Duration
	}{
		{0, 0, 0},
		{0, uint64(2 * time.Millisecond), 2 * time.Millisecond},
		{5 * time.Microsecond, uint64(2 * time.Millisecond), 5 * time.Microsecond},
		{-1, uint64(2 * time.Millisecond), -1},
		{0, uint64(2 * time.Second), 0},
	} {
		if got := ringSpin(tt.chosen, tt.advised); got != tt.want {
			t.Errorf("ringSpin(%v, %d) = %v, want %v", tt.chosen, tt.advised, got, tt.want)
		}
	}
}
