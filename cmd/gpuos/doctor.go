package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gpuos/gpuos/internal/backend/auto"
	"github.com/gpuos/gpuos/internal/config"
)

func init() {
	register(&command{name: "doctor", summary: "say which backend gpuos would use, and why", run: doctorCmd})
}

// doctorCmd reports the NVIDIA driver and devices gpuos can see and which
// backend `serve --backend auto` would choose. It opens no device context.
func doctorCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("doctor", stderr)
	backendName := fs.String("backend", "auto", "backend to check: auto, sim or cuda")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	fmt.Fprintf(stdout, "gpuos %s\n", Version)
	cudaErr := auto.ProbeCUDA()
	if cudaErr != nil {
		fmt.Fprintf(stdout, "NVIDIA driver: not usable: %v\n", cudaErr)
	}
	choice, err := auto.Open(*backendName, auto.Options{})
	if err != nil {
		fmt.Fprintf(stdout, "backend %s: unavailable: %v\n", *backendName, err)
		return exitCode(1)
	}
	b := choice.Backend
	if b.Name() == "cuda" {
		v := b.DriverVersion()
		fmt.Fprintf(stdout, "NVIDIA driver: CUDA %d.%d\n", v/1000, v%1000/10)
	}
	devs, err := b.Devices()
	if err != nil {
		return fmt.Errorf("list %s devices: %w", b.Name(), err)
	}
	for _, d := range devs {
		fmt.Fprintf(stdout, "device %d: %s, compute capability %d.%d, %d SMs, %s, PCI %s\n", d.Ordinal, d.Name,
			d.ComputeMajor, d.ComputeMinor, d.SMCount, config.Size(d.TotalMemory).Human(), dash(d.PCIBusID))
	}
	fmt.Fprintf(stdout, "backend: %s (%s)\n", b.Name(), choice.Reason)
	return nil
}
