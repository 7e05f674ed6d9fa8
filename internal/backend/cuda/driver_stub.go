//go:build !cgo

package cuda

import (
	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
)

// Without cgo the package builds, but no driver library ever opens: Open
// reports ErrNoCgo. These stand-ins have the shapes of driver_cgo.go's.

type (
	hModule   = *struct{ module byte }
	hFunction = *struct{ function byte }
	hStream   = *struct{ stream byte }
	hEvent    = *struct{ event byte }
	hGreenCtx = *struct{ green byte }
)

const haveCgo = false

const missingBase = cuda.CUresult(0x40000000)

const (
	openOK      = 0
	openDlopen  = 1
	openShim    = 2
	openMissing = 3
)

const symbolCount = 0

const notLoaded = cuda.CUDA_ERROR_NOT_INITIALIZED

func symbolName(int) string { return "" }

func cConstant(int) int64 { return -1 }

type lib struct{}

func openLib(string) (*lib, int, string) { return nil, openDlopen, "this build has no cgo" }

func (*lib) close()                              {}
func (*lib) has(int) bool                        { return false }
func (*lib) path() string                        { return "" }
func (*lib) init() cuda.CUresult                 { return notLoaded }
func (*lib) driverVersion() (int, cuda.CUresult) { return 0, notLoaded }
func (*lib) deviceCount() (int, cuda.CUresult)   { return 0, notLoaded }

type rawInfo struct {
	name, busID string
	uuid        [16]byte
	total       uint64
	attrs       []int32
}

func (*lib) deviceInfo(int, int) (rawInfo, string, cuda.CUresult) { return rawInfo{}, "", notLoaded }

type dctx struct{}

func (*lib) openCtx(int, uint64, int) (*dctx, cuda.CUresult) { return nil, notLoaded }

func (*dctx) close() cuda.CUresult                                          { return notLoaded }
func (*dctx) sync() cuda.CUresult                                           { return notLoaded }
func (*dctx) priorityRange() (int, int, cuda.CUresult)                      { return 0, 0, notLoaded }
func (*dctx) memInfo() (uint64, uint64, cuda.CUresult)                      { return 0, 0, notLoaded }
func (*dctx) granularity(*cuda.CUmemAllocationProp) (uint64, cuda.CUresult) { return 0, notLoaded }
func (*dctx) reserve(uint64, uint64) (uint64, cuda.CUresult)                { return 0, notLoaded }
func (*dctx) addressFree(uint64, uint64) cuda.CUresult                      { return notLoaded }
func (*dctx) memCreate(uint64, *cuda.CUmemAllocationProp) (uint64, cuda.CUresult) {
	return 0, notLoaded
}
func (*dctx) memRelease(uint64) cuda.CUresult                               { return notLoaded }
func (*dctx) memMap(uint64, uint64, uint64, uint64) cuda.CUresult           { return notLoaded }
func (*dctx) memUnmap(uint64, uint64) cuda.CUresult                         { return notLoaded }
func (*dctx) setAccess(uint64, uint64, *cuda.CUmemAccessDesc) cuda.CUresult { return notLoaded }
func (*dctx) hostAlloc(int) ([]byte, cuda.CUresult)                         { return nil, notLoaded }
func (*dctx) hostFree([]byte) cuda.CUresult                                 { return notLoaded }
func (*dctx) hostRegister([]byte) cuda.CUresult                             { return notLoaded }
func (*dctx) hostUnregister([]byte) cuda.CUresult                           { return notLoaded }
func (*dctx) moduleLoad([]byte, []byte) (hModule, cuda.CUresult)            { return nil, notLoaded }
func (*dctx) moduleUnload(hModule) cuda.CUresult                            { return notLoaded }
func (*dctx) funcSetAttr(hFunction, cuda.CUfunction_attribute, int32) cuda.CUresult {
	return notLoaded
}
func (*dctx) function(hModule, []byte) (hFunction, [numFuncAttrs]int32, []backend.Param, cuda.CUresult) {
	return nil, [numFuncAttrs]int32{}, nil, notLoaded
}
func (*dctx) global(hModule, []byte) (uint64, uint64, cuda.CUresult) { return 0, 0, notLoaded }
func (*dctx) streamCreate(int) (hStream, cuda.CUresult)              { return nil, notLoaded }
func (*dctx) streamDestroy(hStream) cuda.CUresult                    { return notLoaded }
func (*dctx) partition(int) (hGreenCtx, int, int, cuda.CUresult)     { return nil, 0, 0, notLoaded }
func (*dctx) partitionDestroy(hGreenCtx) cuda.CUresult               { return notLoaded }
func (*dctx) partitionStream(hGreenCtx, int) (hStream, cuda.CUresult) {
	return nil, notLoaded
}
func (*dctx) streamQuery(hStream) cuda.CUresult { return notLoaded }
func (*dctx) streamSync(hStream) cuda.CUresult  { return notLoaded }
func (*dctx) launch(hFunction, *backend.LaunchConfig, hStream, []byte) cuda.CUresult {
	return notLoaded
}

const (
	dirHtoD = 0
	dirDtoH = 1
)

func (*dctx) copyAsync(int, uint64, []byte, hStream) cuda.CUresult      { return notLoaded }
func (*dctx) copySync(int, uint64, []byte, hStream) cuda.CUresult       { return notLoaded }
func (*dctx) copyDtoD(uint64, uint64, uint64, hStream) cuda.CUresult    { return notLoaded }
func (*dctx) memset(uint64, uint32, int, uint64, hStream) cuda.CUresult { return notLoaded }
func (*dctx) eventCreate(uint32) (hEvent, cuda.CUresult)                { return nil, notLoaded }
func (*dctx) eventDestroy(hEvent) cuda.CUresult                         { return notLoaded }
func (*dctx) eventRecord(hEvent, hStream) cuda.CUresult                 { return notLoaded }
func (*dctx) streamWait(hStream, hEvent) cuda.CUresult                  { return notLoaded }
func (*dctx) streamWriteValue32(hStream, uint64, uint32) cuda.CUresult  { return notLoaded }
func (*dctx) eventQuery(hEvent) cuda.CUresult                           { return notLoaded }
func (*dctx) eventSync(hEvent) cuda.CUresult                            { return notLoaded }
func (*dctx) eventElapsed(hEvent, hEvent) (float32, cuda.CUresult)      { return 0, notLoaded }
func (*dctx) addCallback(hStream, uintptr) cuda.CUresult                { return notLoaded }

// Without cgo no stream exists, so no callback is ever enqueued.
func newCallbackHandle(*callback) uintptr { return 0 }
func deleteCallbackHandle(uintptr)        {}

func (*dctx) hostAllocMapped(int) ([]byte, uint64, cuda.CUresult) { return nil, 0, notLoaded }
func (*dctx) hostRegisterMapped([]byte) (uint64, cuda.CUresult)   { return 0, notLoaded }
func (*dctx) memAlloc(uint64) (uint64, cuda.CUresult)             { return 0, notLoaded }
func (*dctx) memFree(uint64) cuda.CUresult                        { return notLoaded }

func slowEnable(uint64) {}

func slowRead(uint64) (name string, at, dur uint64, ok, lost bool) { return }
