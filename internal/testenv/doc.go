// Package testenv starts a whole gpuos — a manager and its driver processes on
// the software GPU — for tests, on a private socket. Driver processes are the
// test binary itself: a test package calls Main from its TestMain, which runs
// the driver when the manager started the binary as one.
package testenv
