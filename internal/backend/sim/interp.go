package sim

import (
	"fmt"

	"github.com/gpuos/gpuos/internal/backend"
)

// compilePTX compiles PTX text for the interpreter.
func compilePTX(text []byte) (program, error) {
	return nil, fmt.Errorf("compile PTX: the interpreter is not built yet: %w", backend.ErrUnsupported)
}
