package cuda

import (
	"fmt"
	"sync"

	"github.com/gpuos/gpuos/internal/backend"
)

// nativeOwners keys each device's cuMemAlloc ranges: each is entered in the
// address space's table of directly addressable ranges (as module variables
// are) under an owner of its own, so copies reach it and MemFree forgets it.
var nativeOwners sync.Map // *Device -> *sync.Map (DevicePtr -> *module)

func (d *Device) natives() *sync.Map {
	v, _ := nativeOwners.LoadOrStore(d, &sync.Map{})
	return v.(*sync.Map)
}

// MemAlloc allocates with the driver's own allocator (cuMemAlloc). gpuos never
// uses it for tenants — their memory is mapped into session windows through
// the VMM calls — but benchmarks compare with it: it is what a native program
// does. It implements backend.SimpleAllocator.
func (d *Device) MemAlloc(size uint64) (backend.DevicePtr, error) {
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer d.live.exit()
	if size == 0 {
		return 0, fmt.Errorf("cuMemAlloc of 0 bytes: %w", backend.ErrInvalidArgument)
	}
	p, r := d.c.memAlloc(size)
	if r != 0 {
		return 0, d.fail(fmt.Sprintf("cuMemAlloc %d bytes", size), r)
	}
	owner := &module{}
	d.as.addGlobal(p, size, owner)
	d.natives().Store(backend.DevicePtr(p), owner)
	return backend.DevicePtr(p), nil
}

// MemFree frees memory from MemAlloc (cuMemFree).
func (d *Device) MemFree(ptr backend.DevicePtr) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	if owner, ok := d.natives().LoadAndDelete(ptr); ok {
		d.as.removeGlobals(owner.(*module))
	}
	return d.fail("cuMemFree", d.c.memFree(uint64(ptr)))
}

var _ backend.SimpleAllocator = (*Device)(nil)
