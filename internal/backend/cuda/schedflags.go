package cuda

import (
	"fmt"
	"os"

	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
)

// SchedEnv chooses how the daemon's threads wait for the device in the
// driver's synchronizing calls (cuStreamSynchronize, cuEventSynchronize on
// events without blocking sync): the primary context's CU_CTX_SCHED_* flag,
// set before the context is retained. "spin" polls, "yield" polls and
// yields the CPU between polls (a thread woken onto a CPU where another
// waits then runs at once), "blocking" sleeps until the device interrupts,
// "auto" is the driver's choice (spin while the process has fewer contexts
// than CPUs). Unset: the flags are left as they are.
const SchedEnv = "GPUOS_CUDA_SCHED"

// schedFlags returns the flags $GPUOS_CUDA_SCHED asks for, or -1 when unset.
func schedFlags() (int, error) {
	v, ok := os.LookupEnv(SchedEnv)
	if !ok || v == "" {
		return -1, nil
	}
	switch v {
	case "auto":
		return int(cuda.CU_CTX_SCHED_AUTO), nil
	case "spin":
		return int(cuda.CU_CTX_SCHED_SPIN), nil
	case "yield":
		return int(cuda.CU_CTX_SCHED_YIELD), nil
	case "blocking":
		return int(cuda.CU_CTX_SCHED_BLOCKING_SYNC), nil
	}
	return 0, fmt.Errorf("$%s=%q: want auto, spin, yield or blocking: %w", SchedEnv, v, backend.ErrInvalidArgument)
}
