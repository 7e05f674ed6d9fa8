//go:build !linux

package driver

import (
	"fmt"

	"github.com/gpuos/gpuos/internal/backend"
)

func raiseThread(int) (func(), error) {
	return nil, fmt.Errorf("thread priority: %w", backend.ErrUnsupported)
}
