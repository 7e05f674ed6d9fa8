//go:build linux

package ring

import "testing"

// TestNoYield: with $GPUOS_RING_YIELD=0 (yieldOff) the poll loops spin
// without giving up the CPU, and every spin setting still delivers
// everything.
func TestNoYield(t *testing.T) {
	defer func(old bool) { yieldOff = old }(yieldOff)
	yieldOff = true
	checkWaitModes(t)
}
