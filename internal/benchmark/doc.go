// Package benchmark measures gpuos against native use of the same backend, in one
// process and one run: each measurement runs natively (the backend opened directly,
// no daemon) and through gpuos (the Go client, through the daemon and a driver
// process), alternating, and reports medians and their ratio. gpuos bench prints
// it; bench/RESULTS.md keeps the figures measured on a real GPU.
package benchmark
