//go:build cgo

package auto

import (
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/cuda"
)

// With cgo, the NVIDIA backend is built in: Open can choose it.
func init() {
	cudaOpener = func() (backend.Backend, error) {
		b, err := cuda.Open()
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return b, nil
	}
}
