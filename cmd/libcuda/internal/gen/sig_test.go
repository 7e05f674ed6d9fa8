package main

import (
	"os"
	"testing"
)

const header = `
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
} CUdevice_attribute;
typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;
typedef struct CUDA_MEMCPY2D_st {
    size_t srcXInBytes;
} CUDA_MEMCPY2D_v2;
typedef CUDA_MEMCPY2D_v2 CUDA_MEMCPY2D;
typedef void(CUDA_CB *CUhostFn)(void *userData);
#define cuMemAlloc                           cuMemAlloc_v2
#define cuMemcpy2D                           CU_API_PTDS_(cuMemcpy2D_v2)
CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D *pCopy);
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx);
CUresult CUDAAPI cuCtxSynchronize(void);
CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr);
CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId);
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int sharedMemBytes, void **kernelParams, void **extra);
`

func TestSignatures(t *testing.T) {
	sigs := Signatures(header)
	tests := []struct{ name, want string }{
		{"cuDeviceGetAttribute", "I pi,i attrib,i dev"},
		{"cuMemAlloc_v2", "X dptr,z bytesize"},
		{"cuMemcpy2D_v2", "p pCopy"},
		{"cuMemcpy2D_v2_ptds", "p pCopy"},
		{"cuCtxGetCurrent", "X pctx"},
		{"cuCtxSynchronize", ""},
		{"cuDeviceGetName", "C name,i len,i dev"},
		{"cuGetErrorName", "x error,T pStr"},
		{"cuLaunchHostFunc", "x hStream,x fn,p userData"},
		{"cuEventElapsedTime", "F pMilliseconds,x hStart,x hEnd"},
		{"cuGetExportTable", "X ppExportTable,U pExportTableId"},
		{"cuLaunchKernel", "x f,u gridDimX,u sharedMemBytes,p kernelParams,p extra"},
		{"cuGetProcAddress", "s symbol,X pfn,i cudaVersion,x flags"}, // from extraPrototypes
	}
	for _, tt := range tests {
		got, ok := sigs[tt.name]
		if !ok || got != tt.want {
			t.Errorf("%s: have %q (%v), want %q", tt.name, got, ok, tt.want)
		}
	}
	if _, ok := sigs["cuMemAlloc"]; ok {
		t.Error("the header's cuMemAlloc declares cuMemAlloc_v2, not the old cuMemAlloc")
	}
}

// Every entry point the shim implements has a parameter list for the call
// trace.
func TestImplementedHaveSignatures(t *testing.T) {
	h, err := os.ReadFile("../../../../include/cuda.h")
	if err != nil {
		t.Fatal(err)
	}
	impl, err := Exported("../..")
	if err != nil {
		t.Fatal(err)
	}
	sigs := Signatures(string(h))
	for n := range impl {
		if _, ok := sigs[n]; !ok {
			t.Errorf("%s is implemented but has no parameter list for the call trace", n)
		}
	}
}
