// Package backendtest is the conformance suite of backend.Backend: what every
// backend (the software GPU, the real NVIDIA driver) must do alike, as
// subtests any backend's tests run with Run. It checks behaviour only through
// the backend interface, so one failing subtest names a difference between
// backends, and a behaviour the suite pins down is one gpuos may rely on.
//
// The suite needs at most a few hundred MiB of device memory and, for the
// kernel subtests, the repository's testdata (real nvcc output). It never
// faults a context on purpose: a backend's fault tests stay its own, since on
// a real GPU a fault poisons the whole process.
//
// The package holds no state; Run may be called from several tests.
//
// # Use
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, sim.New(sim.Options{}), backendtest.Options{})
//	}
//
// backendtest_test.go runs it on the sim; internal/backend/cuda runs it on its
// fake driver (without kernels) and on a real GPU.
package backendtest
