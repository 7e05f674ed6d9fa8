package sim

import (
	"fmt"

	"github.com/gpuos/gpuos/internal/backend"
)

// ptxFromFatbin extracts the best PTX of a fatbin: the highest architecture
// not above sm_90.
func ptxFromFatbin(image []byte) ([]byte, error) {
	return nil, fmt.Errorf("fatbin: not built yet: %w", backend.ErrUnsupported)
}
