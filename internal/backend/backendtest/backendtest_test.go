package backendtest_test

import (
	"testing"

	"github.com/gpuos/gpuos/internal/backend/backendtest"
	"github.com/gpuos/gpuos/internal/backend/sim"
)

// The suite passes on the software GPU: it checks the suite as much as the sim.
func TestSim(t *testing.T) {
	backendtest.Run(t, sim.New(sim.Options{Memory: 4 << 30}), backendtest.Options{})
}
