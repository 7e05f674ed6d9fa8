package auto

import (
	"errors"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

func TestOpen(t *testing.T) {
	c, err := Open("sim", Options{})
	if err != nil || c.Backend.Name() != "sim" {
		t.Fatalf("Open(sim) = %v, %v", c, err)
	}
	if _, err := Open("gpu", Options{}); !errors.Is(err, ErrUnknownBackend) || !errors.Is(err, v1.ErrInvalidArgument) {
		t.Errorf("Open(gpu): %v, want ErrUnknownBackend", err)
	}
	c, err = Open("auto", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ProbeCUDA() == nil {
		if c.Backend.Name() != "cuda" {
			t.Errorf("a usable NVIDIA driver but auto chose %s", c.Backend.Name())
		}
		return
	}
	// No GPU here: auto falls back to sim and says why; cuda is an error.
	if c.Backend.Name() != "sim" || !strings.Contains(c.Reason, "falling back to the software GPU") {
		t.Errorf("auto without a GPU = %s (%s)", c.Backend.Name(), c.Reason)
	}
	if _, err := Open("cuda", Options{}); err == nil {
		t.Error("Open(cuda) succeeded without a usable driver")
	}
}

func TestOpenUsesInjectedCUDA(t *testing.T) {
	saved := cudaOpener
	defer func() { cudaOpener = saved }()
	cudaOpener = func() (backend.Backend, error) { return nil, v1.Errorf(v1.CodeNotFound, "libcuda.so.1: cannot open") }
	c, err := Open("auto", Options{})
	if err != nil || c.Backend.Name() != "sim" || !strings.Contains(c.Reason, "libcuda.so.1") {
		t.Errorf("auto with a failing driver = %v, %v", c, err)
	}
}
