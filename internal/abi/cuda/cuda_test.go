package cuda_test

import (
	"encoding/binary"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/abi/cuda"
)

func TestResultNames(t *testing.T) {
	tests := []struct {
		r          cuda.CUresult
		name, desc string
	}{
		{cuda.CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
		{cuda.CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
		{cuda.CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
		{cuda.CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
		{cuda.CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
		{cuda.CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
		{cuda.CUresult(12345), "", ""},
	}
	for _, tt := range tests {
		if have := tt.r.Name(); have != tt.name {
			t.Errorf("CUresult(%d).Name() = %q, want %q", uint32(tt.r), have, tt.name)
		}
		if have := tt.r.Description(); have != tt.desc {
			t.Errorf("CUresult(%d).Description() = %q, want %q", uint32(tt.r), have, tt.desc)
		}
	}
	if have, want := cuda.CUresult(12345).String(), "CUresult(12345)"; have != want {
		t.Errorf("String of an unknown CUresult = %q, want %q", have, want)
	}
}

// TestEveryResultNamed checks that each CUresult has its own name and a description,
// since cuGetErrorName and cuGetErrorString must answer for every code.
func TestEveryResultNamed(t *testing.T) {
	n := 0
	for _, c := range cuda.Constants() {
		if c.Type != "CUresult" {
			continue
		}
		n++
		r := cuda.CUresult(c.Value)
		if r.Name() != c.Name {
			t.Errorf("%s: Name() = %q", c.Name, r.Name())
		}
		if r.Description() == "" || r.String() != c.Name {
			t.Errorf("%s: Description() = %q, String() = %q", c.Name, r.Description(), r.String())
		}
	}
	if n < 100 {
		t.Errorf("only %d CUresult values mirrored", n)
	}
}

// TestKnownValues spot-checks values the rest of gpuos relies on; the full set is checked
// against the C header by the header tests and against NVIDIA's by internal/verify.
func TestKnownValues(t *testing.T) {
	tests := []struct {
		name       string
		have, want int64
	}{
		{"CUDA_VERSION", cuda.CUDA_VERSION, 13000},
		{"CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK", int64(cuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1},
		{"CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT", int64(cuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 16},
		{"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR", int64(cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 75},
		{"MaxDeviceAttribute", int64(cuda.MaxDeviceAttribute), 148},
		{"CU_POINTER_ATTRIBUTE_RANGE_SIZE", int64(cuda.CU_POINTER_ATTRIBUTE_RANGE_SIZE), 12},
		{"CU_MEMORYTYPE_DEVICE", int64(cuda.CU_MEMORYTYPE_DEVICE), 2},
		{"CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM", int64(cuda.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), 2},
		{"CU_LAUNCH_PARAM_BUFFER_SIZE", cuda.CU_LAUNCH_PARAM_BUFFER_SIZE, 2},
		{"CU_STREAM_PER_THREAD", int64(cuda.CU_STREAM_PER_THREAD), 2},
		{"CU_DEVICE_CPU", int64(cuda.CU_DEVICE_CPU), -1},
		{"CU_IPC_HANDLE_SIZE", cuda.CU_IPC_HANDLE_SIZE, 64},
		{"CU_SHAREDMEM_CARVEOUT_DEFAULT", int64(cuda.CU_SHAREDMEM_CARVEOUT_DEFAULT), -1},
	}
	for _, tt := range tests {
		if tt.have != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.have, tt.want)
		}
	}
}

func TestConstantsTable(t *testing.T) {
	enums := map[string]cuda.EnumType{}
	for _, e := range cuda.EnumTypes() {
		enums[e.Name] = e
	}
	names := map[string]bool{}
	seen := map[string]map[int64]bool{}
	perType := map[string]int{}
	for _, c := range cuda.Constants() {
		if names[c.Name] {
			t.Errorf("%s listed twice", c.Name)
		}
		names[c.Name] = true
		switch c.Kind {
		case cuda.KindEnum:
			e, ok := enums[c.Type]
			if !ok {
				t.Errorf("%s: enum type %q not in EnumTypes", c.Name, c.Type)
			}
			if c.Value < 0 && !e.Signed {
				t.Errorf("%s: negative value in unsigned enum %s", c.Name, c.Type)
			}
			perType[c.Type]++
		case cuda.KindMacro, cuda.KindPointer:
		default:
			t.Errorf("%s: bad kind %d", c.Name, c.Kind)
		}
		if seen[c.Type] == nil {
			seen[c.Type] = map[int64]bool{}
		}
		if alias := c.Kind == cuda.KindEnum && seen[c.Type][c.Value]; alias != c.Alias {
			t.Errorf("%s: Alias = %v, want %v", c.Name, c.Alias, alias)
		}
		seen[c.Type][c.Value] = true
	}
	for name := range enums {
		if perType[name] == 0 {
			t.Errorf("enum %s has no values", name)
		}
	}
	for _, c := range cuda.Constants() {
		if c.Type == "CUdevice_attribute" && c.Name != "CU_DEVICE_ATTRIBUTE_MAX" && c.Value >= int64(cuda.MaxDeviceAttribute) {
			t.Errorf("%s = %d is not below MaxDeviceAttribute", c.Name, c.Value)
		}
	}
}

func TestEnumString(t *testing.T) {
	if have, want := cuda.CU_CTX_BLOCKING_SYNC.String(), "CU_CTX_SCHED_BLOCKING_SYNC"; have != want {
		t.Errorf("alias String() = %q, want the first name %q", have, want)
	}
	if have, want := cuda.CUdevice_attribute(9999).String(), "CUdevice_attribute(9999)"; have != want {
		t.Errorf("unknown attribute String() = %q, want %q", have, want)
	}
}

// goStructs maps each mirrored C structure to its Go mirror.
var goStructs = map[string]any{
	"CUuuid":                            cuda.CUuuid{},
	"CUipcMemHandle":                    cuda.CUipcMemHandle{},
	"CUipcEventHandle":                  cuda.CUipcEventHandle{},
	"CUdevprop":                         cuda.CUdevprop{},
	"CUDA_MEMCPY2D":                     cuda.CUDA_MEMCPY2D{},
	"CUDA_MEMCPY3D":                     cuda.CUDA_MEMCPY3D{},
	"CUmemLocation":                     cuda.CUmemLocation{},
	"CUmemAccessDesc":                   cuda.CUmemAccessDesc{},
	"CUmemAllocationProp":               cuda.CUmemAllocationProp{},
	"CUmemPoolProps":                    cuda.CUmemPoolProps{},
	"CUaccessPolicyWindow":              cuda.CUaccessPolicyWindow{},
	"CUlaunchAttributeValue":            cuda.CUlaunchAttributeValue{},
	"CUlaunchAttribute":                 cuda.CUlaunchAttribute{},
	"CUlaunchConfig":                    cuda.CUlaunchConfig{},
	"CUDA_POINTER_ATTRIBUTE_P2P_TOKENS": cuda.CUDA_POINTER_ATTRIBUTE_P2P_TOKENS{},
	"CUctxCigParam":                     cuda.CUctxCigParam{},
	"CUctxCreateParams":                 cuda.CUctxCreateParams{},
}

// TestLayouts checks each Go mirror against the C layout table: its size (as Go lays it
// out and as encoding/binary packs it, which agree only if every pad is explicit) and the
// offset and size of every member.
func TestLayouts(t *testing.T) {
	if strconv.IntSize != 64 {
		t.Skip("the layouts are those of 64-bit targets")
	}
	layouts := cuda.Layouts()
	if len(layouts) != len(goStructs) {
		t.Errorf("%d layouts, %d Go structs", len(layouts), len(goStructs))
	}
	for _, l := range layouts {
		v, ok := goStructs[l.Name]
		if !ok {
			t.Errorf("%s: no Go mirror", l.Name)
			continue
		}
		typ := reflect.TypeOf(v)
		if int(typ.Size()) != l.Size {
			t.Errorf("%s: Go size %d, C size %d", l.Name, typ.Size(), l.Size)
		}
		if n := binary.Size(v); n != l.Size {
			t.Errorf("%s: encoding/binary size %d, C size %d (implicit padding?)", l.Name, n, l.Size)
		}
		if l.Union {
			continue
		}
		for _, f := range l.Fields {
			off, size, ok := goField(typ, f.Path)
			if !ok {
				t.Errorf("%s.%s: no Go field", l.Name, f.Path)
				continue
			}
			if off != f.Offset || size != f.Size {
				t.Errorf("%s.%s: Go offset %d size %d, C offset %d size %d", l.Name, f.Path, off, size, f.Offset, f.Size)
			}
		}
	}
}

// goField finds the Go field for a C member path: the same name, ignoring case and
// underscores.
func goField(typ reflect.Type, path string) (offset, size int, ok bool) {
	for _, part := range strings.Split(path, ".") {
		if typ.Kind() != reflect.Struct {
			return 0, 0, false
		}
		var found bool
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Name != "_" && normalize(f.Name) == normalize(part) {
				offset += int(f.Offset)
				typ, found = f.Type, true
				break
			}
		}
		if !found {
			return 0, 0, false
		}
	}
	return offset, int(typ.Size()), true
}

func normalize(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

func TestSymbols(t *testing.T) {
	data, err := os.ReadFile("testdata/libcuda-580-symbols.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(string(data))
	slices.Sort(want)
	syms := cuda.Symbols()
	have := make([]string, len(syms))
	for i, s := range syms {
		have[i] = s.Name
	}
	if !slices.Equal(have, want) {
		t.Fatalf("Symbols() differ from testdata/libcuda-580-symbols.txt (%d vs %d names)", len(have), len(want))
	}
	if len(have) != 682 {
		t.Errorf("%d exported functions, want the 682 of driver 580", len(have))
	}
	data, err = os.ReadFile("testdata/libcuda-580-data-symbols.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cuda.DataSymbols(), strings.Fields(string(data))) {
		t.Errorf("DataSymbols() differ from testdata/libcuda-580-data-symbols.txt")
	}
	for _, d := range cuda.DataSymbols() {
		if _, found := slices.BinarySearch(have, d); found {
			t.Errorf("%s is both a function and a data symbol", d)
		}
	}
	handedOut := 0
	for _, s := range syms {
		if s.API == "" {
			if s.Stream != cuda.StreamNone || s.Since != 0 {
				t.Errorf("%s: not handed out but Stream %d Since %d", s.Name, s.Stream, s.Since)
			}
			continue
		}
		handedOut++
		if !strings.HasPrefix(s.Name, s.API) {
			t.Errorf("%s: API %s is not a prefix", s.Name, s.API)
		}
		if s.Returns != "CUresult" {
			t.Errorf("%s returns %q", s.Name, s.Returns)
		}
	}
	if handedOut < 660 {
		t.Errorf("only %d symbols are handed out by cuGetProcAddress", handedOut)
	}
}

// TestSymbolsIsACopy makes sure callers cannot change the table Resolve uses.
func TestSymbolsIsACopy(t *testing.T) {
	s := cuda.Symbols()
	i := slices.IndexFunc(s, func(s cuda.Symbol) bool { return s.Name == "cuMemAlloc_v2" })
	s[i].Name = "changed"
	if have, _ := cuda.Resolve("cuMemAlloc", 13000, 0); have != "cuMemAlloc_v2" {
		t.Errorf("Resolve after changing a copy = %q", have)
	}
}
