package auto

import (
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
)

// Errors returned by Open.
var ErrUnknownBackend = v1.Errorf(v1.CodeInvalidArgument, "unknown backend")

// Options configure the backends Open may choose.
type Options struct {
	Sim sim.Options
}

// cudaOpener opens the NVIDIA backend; nil when this build has none. It
// reports why a GPU cannot be used so doctor can say so.
var cudaOpener func() (backend.Backend, error)

// Choice is the backend Open picked and why.
type Choice struct {
	Backend backend.Backend
	Reason  string
}

// Open returns the named backend: "sim", "cuda", or "auto" (cuda when a driver
// and at least one device are present, else sim).
func Open(name string, opts Options) (Choice, error) {
	switch name {
	case "sim":
		return Choice{sim.New(opts.Sim), "the software GPU was asked for"}, nil
	case "cuda":
		b, err := openCUDA()
		if err != nil {
			return Choice{}, err
		}
		return Choice{b, "the NVIDIA driver was asked for"}, nil
	case "", "auto":
		b, err := openCUDA()
		if err == nil {
			return Choice{b, "an NVIDIA driver and device are present"}, nil
		}
		return Choice{sim.New(opts.Sim), fmt.Sprintf("falling back to the software GPU: %v", err)}, nil
	}
	return Choice{}, fmt.Errorf("%w %q (want auto, sim or cuda)", ErrUnknownBackend, name)
}

// ProbeCUDA reports why the NVIDIA backend cannot be used, or nil if it can.
func ProbeCUDA() error {
	_, err := openCUDA()
	return err
}

func openCUDA() (backend.Backend, error) {
	if cudaOpener == nil {
		return nil, v1.Errorf(v1.CodeUnsupported, "this build of gpuos has no NVIDIA backend (built without cgo)")
	}
	b, err := cudaOpener()
	if err != nil {
		return nil, err
	}
	devs, err := b.Devices()
	if err != nil {
		return nil, fmt.Errorf("list NVIDIA devices: %w", err)
	}
	if len(devs) == 0 {
		return nil, v1.Errorf(v1.CodeNotFound, "the NVIDIA driver reports no devices")
	}
	return b, nil
}
