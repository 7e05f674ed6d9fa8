package mem

import (
	"errors"
	"fmt"

	"github.com/gpuos/gpuos/internal/backend"
	"golang.org/x/sys/unix"
)

// registeredHost is host memory the swap store mapped itself and had the
// backend page-lock (RegisterHost): Options.SwapPinRegister.
type registeredHost struct {
	dev backend.Device
	mem []byte
}

func (h *registeredHost) Bytes() []byte { return h.mem }

func (h *registeredHost) Free() error {
	err := h.dev.UnregisterHost(h.mem)
	if merr := unix.Munmap(h.mem); merr != nil {
		err = errors.Join(err, fmt.Errorf("unmap %d bytes of host memory: %w", len(h.mem), merr))
	}
	return err
}

// registerHost maps n bytes of anonymous memory, asks for huge pages (fewer,
// larger faults), faults it in on the calling goroutine (the kernel zeroes
// pages on the faulting thread, so pinners working on several pieces fault
// in parallel) and has the backend page-lock it.
func registerHost(dev backend.Device, n uint64) (backend.HostMemory, error) {
	mem, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes of host memory: %w", n, err)
	}
	_ = unix.Madvise(mem, unix.MADV_HUGEPAGE) // a hint; without it, small pages
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 0
	}
	if err := dev.RegisterHost(mem); err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	return &registeredHost{dev: dev, mem: mem}, nil
}
