package shim

import (
	"crypto/sha256"
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/fatbin"
)

// A guarded tenant runs PTX only, through the guard: the daemon refuses
// machine code (a cubin, or a fat binary without PTX for the device). The
// shim loads libraries lazily (library.go), so such a refusal used to
// surface where a kernel's code was first needed, at cuKernelGetFunction or a
// launch — and CuPy's CUB wrapper ignores errors there: run 11a's guarded
// cupy_reduction printed wrong sums and exited 0. So once the shim knows the
// tenant is guarded, it refuses an image that holds machine code only already
// at cuLibraryLoadData, where the runtime's module registration fails and the
// application sees the error. An image with PTX for some device stays lazy,
// as does everything for the other tiers: a trusted tenant's allowlist names
// the few libraries it uses, not the thousands cuBLAS registers.
//
// The tier comes from the session: the first one opened tells it (the
// manager's SessionOpened, client.Session.Trust). Until then — libraries a
// static runtime loads before any context — the daemon's lazy refusal is all
// there is.

// Errors returned by the trust checks.
var (
	// errMachineCodeOnly: an image a guarded tenant can never run.
	errMachineCodeOnly = v1.Errorf(v1.CodeUnsupported, "module has no PTX to guard")
)

// sessionTrust returns a session's tenant's trust tier (the manager's
// SessionOpened carries it).
func sessionTrust(s *client.Session) v1.TrustTier { return s.Trust() }

// trustUnknown is Driver.trust before a session has told the tier.
const trustUnknown = -1

// noteTrust records the tier a newly opened session told.
func (d *Driver) noteTrust(s *client.Session) {
	d.trust.Store(int32(d.sessionTrust(s)))
}

// guardedTenant reports whether the tenant is known to be guarded.
func (d *Driver) guardedTenant() bool {
	return d.trust.Load() == int32(v1.TrustGuarded)
}

// machineCodeOnly reports whether an image is machine code with no PTX that
// any of the devices could use: a cubin, or a fat binary from which
// fatbin.Select picks no PTX for any device (the daemon's rule, per device).
// An image it cannot read is not: the daemon judges it.
func (d *Driver) machineCodeOnly(data []byte) bool {
	switch {
	case fatbin.IsELF(data):
		return true
	case !fatbin.IsFatbin(data):
		return false
	}
	entries, err := fatbin.Parse(data)
	if err != nil {
		return false
	}
	for _, dv := range d.devices {
		if ptx, _ := fatbin.Select(entries, int(dv.info.ComputeMajor), int(dv.info.ComputeMinor)); ptx != nil {
			return false
		}
	}
	return true
}

// admitImage refuses, for a guarded tenant, an image that holds machine code
// only (CUDA_ERROR_NOT_SUPPORTED, the daemon's answer, explained in the log
// as the daemon's refusals are).
func (d *Driver) admitImage(data []byte, call string) Result {
	if !d.guardedTenant() || !d.machineCodeOnly(data) {
		return cu.CUDA_SUCCESS
	}
	return d.fail(fmt.Errorf("%s: %w: it holds machine code (SASS) only, sha256 %x, and the tenant's trust tier is guarded, "+
		"which runs PTX through the guard. Ship PTX (nvcc -gencode arch=compute_XX,code=compute_XX, or a fatbin that embeds PTX); "+
		"or have the operator add the hash to trusted_modules and give the tenant trust: trusted",
		call, errMachineCodeOnly, sha256.Sum256(data)))
}
