//go:build !linux

package driver

import (
	"fmt"

	"github.com/gpuos/gpuos/internal/backend"
)

func placeThread(int, bool, []int) (func(), error) {
	return nil, fmt.Errorf("thread priority and CPUs: %w", backend.ErrUnsupported)
}

func keepThreadsOff([]int) error {
	return fmt.Errorf("thread CPUs: %w", backend.ErrUnsupported)
}
