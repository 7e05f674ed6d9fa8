// Package examples holds gpuos's example workloads: CUDA C kernels, the PTX nvcc
// 13.0 made of them (nvcc -ptx -arch=sm_80), and Go functions that run each one
// through a gpuos session on random inputs and check the result against a CPU
// reference. gpuos demo runs them as three tenants at once; they also run on a
// real GPU (gpuos demo --backend cuda).
package examples
