package main

import (
	"regexp"
	"strings"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// The call trace (GPUOS_SHIM_TRACE=2) prints each call's arguments by name
// and type. Signatures reads them from include/cuda.h, the project's own
// declarations of the functions the shim implements, and writes each as the
// compact form internal/shim/calltrace.go formats from: one "K name" per
// parameter, comma-separated, K being how to show the value (see
// shim.FormatCall).

var (
	protoRE   = regexp.MustCompile(`(?m)^CUresult CUDAAPI (\w+)\(([^)]*)\);`)
	defineRE  = regexp.MustCompile(`(?m)^#define (cu\w+)\s+(?:CU_API_PT[DS][SZ]_\((\w+)\)|(cu\w+))\s*$`)
	handleRE  = regexp.MustCompile(`(?m)^typedef struct \w+ \*(\w+);`)
	enumRE    = regexp.MustCompile(`(?m)^\} (\w+);`)
	aliasRE   = regexp.MustCompile(`(?m)^typedef ([\w ]+?) (\w+);`)
	fnPtrRE   = regexp.MustCompile(`(?m)^typedef [\w ]+\(\s*CUDA_CB \*(\w+)\)`)
	structRE  = regexp.MustCompile(`(?m)^typedef struct (\w+) \{`)
	enumOpen  = regexp.MustCompile(`(?m)^typedef enum (\w+) \{`)
	inArrays  = map[string]bool{"kernelParams": true, "extra": true, "optionValues": true, "jitOptionsValues": true, "libraryOptionValues": true}
	builtin32 = map[string]byte{"int": 'i', "unsigned int": 'u', "unsigned": 'u', "uint32_t": 'u', "int32_t": 'i', "short": 'i'}
	builtin64 = map[string]byte{"size_t": 'z', "unsigned long long": 'x', "uint64_t": 'x', "long long": 'x', "long": 'x', "unsigned long": 'x', "uintptr_t": 'x'}
)

// typeKinds classifies the header's typedef names: 'i' a 4-byte integer or
// enum, 'u' a 4-byte unsigned, 'x' an 8-byte value shown in hex (handles,
// device pointers), 'z' a size, 'S' a structure.
func typeKinds(h string) map[string]byte {
	k := map[string]byte{}
	for _, m := range handleRE.FindAllStringSubmatch(h, -1) {
		k[m[1]] = 'x'
	}
	for _, m := range fnPtrRE.FindAllStringSubmatch(h, -1) {
		k[m[1]] = 'x'
	}
	// Enumerations and structures end with "} Name;": which one depends on
	// the opening line before it.
	opens := append(enumOpen.FindAllStringIndex(h, -1), structRE.FindAllStringIndex(h, -1)...)
	for _, m := range enumRE.FindAllStringSubmatchIndex(h, -1) {
		name := h[m[2]:m[3]]
		best, isEnum := -1, false
		for _, o := range opens {
			if o[0] < m[0] && o[0] > best {
				best, isEnum = o[0], strings.HasPrefix(h[o[0]:], "typedef enum")
			}
		}
		if isEnum {
			k[name] = 'i'
		} else {
			k[name] = 'S'
		}
	}
	// Aliases, resolved until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, m := range aliasRE.FindAllStringSubmatch(h, -1) {
			from, to := strings.TrimSpace(m[1]), m[2]
			if _, done := k[to]; done {
				continue
			}
			v, ok := k[from]
			if !ok {
				v, ok = builtin32[from]
			}
			if !ok {
				v, ok = builtin64[from]
			}
			if ok {
				k[to] = v
				changed = true
			}
		}
	}
	return k
}

// extraPrototypes declare the entry points the shim implements that
// include/cuda.h leaves out (older ABI versions a runtime may still ask for),
// for the call trace only.
const extraPrototypes = `
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, void *paramsArray, int numParams, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx);
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx);
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx);
CUresult CUDAAPI cuCtxResetPersistingL2Cache(void);
CUresult CUDAAPI cuCtxGetSharedMemConfig(CUsharedconfig *pConfig);
CUresult CUDAAPI cuCtxSetSharedMemConfig(CUsharedconfig config);
CUresult CUDAAPI cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config);
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
CUresult CUDAAPI cuEventDestroy(CUevent hEvent);
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult CUDAAPI cuStreamDestroy(CUstream hStream);
CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult CUDAAPI cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, void **pGreenCtx);
CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(int *mode);
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out);
CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out);
CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out, const void **edgeData_out, size_t *numDependencies_out);
`

// Signatures returns each exported function's parameters in the call
// trace's form, for the functions the header declares (and their per-thread
// variants).
func Signatures(h string) map[string]string {
	kinds := typeKinds(h)
	symbolOf := map[string]string{}
	for _, m := range defineRE.FindAllStringSubmatch(h, -1) {
		if m[2] != "" {
			symbolOf[m[1]] = m[2]
		} else {
			symbolOf[m[1]] = m[3]
		}
	}
	sigs := map[string]string{}
	for _, m := range protoRE.FindAllStringSubmatch(h, -1) {
		name := m[1]
		if s, ok := symbolOf[name]; ok {
			name = s
		}
		sigs[name] = paramSig(m[2], kinds)
	}
	for _, m := range protoRE.FindAllStringSubmatch(extraPrototypes, -1) {
		if _, ok := sigs[m[1]]; !ok {
			sigs[m[1]] = paramSig(m[2], kinds)
		}
	}
	for _, s := range cu.Symbols() {
		if _, ok := sigs[s.Name]; ok {
			continue
		}
		for _, suffix := range []string{"_ptds", "_ptsz"} {
			if base, ok := strings.CutSuffix(s.Name, suffix); ok {
				if sig, ok := sigs[base]; ok {
					sigs[s.Name] = sig
				}
			}
		}
	}
	return sigs
}

func paramSig(params string, kinds map[string]byte) string {
	params = strings.TrimSpace(params)
	if params == "" || params == "void" {
		return ""
	}
	var out []string
	for _, p := range strings.Split(params, ",") {
		p = strings.TrimSpace(p)
		i := strings.LastIndexAny(p, " *")
		name, typ := p[i+1:], strings.TrimSpace(p[:i+1])
		out = append(out, string(paramKind(typ, name, kinds))+" "+name)
	}
	return strings.Join(out, ",")
}

// paramKind is how the call trace shows a parameter of C type typ.
func paramKind(typ, name string, kinds map[string]byte) byte {
	stars := strings.Count(typ, "*")
	isConst := strings.HasPrefix(typ, "const ")
	base := strings.TrimSpace(strings.ReplaceAll(strings.TrimPrefix(typ, "const "), "*", ""))
	base = strings.TrimSpace(strings.TrimSuffix(base, " const"))
	scalar := func(b string) (byte, bool) {
		if k, ok := builtin32[b]; ok {
			return k, true
		}
		if k, ok := builtin64[b]; ok {
			return k, true
		}
		switch b {
		case "float":
			return 'f', true
		case "double":
			return 'd', true
		}
		k, ok := kinds[b]
		return k, ok && k != 'S'
	}
	switch stars {
	case 0:
		if k, ok := scalar(base); ok {
			return k
		}
		return 'x'
	case 1:
		switch {
		case base == "char" && isConst:
			return 's'
		case base == "char":
			return 'C' // an output buffer for a string, shown after the call
		case base == "CUuuid" && isConst:
			return 'U'
		case base == "CUuuid":
			return 'V'
		case isConst || base == "void":
			return 'p'
		}
		switch k, _ := scalar(base); k {
		case 'i', 'u':
			return 'I'
		case 'x':
			return 'X'
		case 'z':
			return 'Z'
		case 'f':
			return 'F'
		}
		return 'p'
	case 2:
		if base == "char" && isConst {
			return 'T'
		}
		if inArrays[name] {
			return 'p'
		}
		return 'X'
	}
	return 'p'
}
