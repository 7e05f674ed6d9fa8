package abitest

import (
	"errors"
	"os"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

func TestParseCases(t *testing.T) {
	in := "# c\n\"\" 0 0 NOT_FOUND\ncuMemAlloc 3020 0 cuMemAlloc_v2\nrules\ncuX 13000 0x2 NOT_FOUND\n"
	cases, err := ParseCases([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Case{
		{Name: "", CUDAVersion: 0, Flags: 0, Symbol: NotFound, Traced: true, Line: 2},
		{Name: "cuMemAlloc", CUDAVersion: 3020, Flags: 0, Symbol: "cuMemAlloc_v2", Traced: true, Line: 3},
		{Name: "cuX", CUDAVersion: 13000, Flags: 2, Symbol: NotFound, Traced: false, Line: 5},
	}
	if len(cases) != len(want) {
		t.Fatalf("got %d cases, want %d", len(cases), len(want))
	}
	for i := range want {
		if cases[i] != want[i] {
			t.Errorf("case %d = %+v, want %+v", i, cases[i], want[i])
		}
	}
}

func TestParseCasesErrors(t *testing.T) {
	for _, in := range []string{
		"cuX 1 0\n",
		"cuX one 0 cuX\n",
		"cuX -1 0 cuX\n",
		"cuX 1 z cuX\n",
		"1cuX 1 0 cuX\n",
		"cuX 1 0 c-X\n",
		"rules\nrules\n",
	} {
		_, err := ParseCases([]byte(in))
		if !errors.Is(err, ErrSyntax) || !errors.Is(err, v1.ErrMalformed) {
			t.Errorf("ParseCases(%q) error = %v, want ErrSyntax", in, err)
		}
	}
}

func TestParseHeader(t *testing.T) {
	in := `#define cuMemAlloc cuMemAlloc_v2
#define cuMemcpyHtoD CU_API_PTDS_(cuMemcpyHtoD_v2)
#define cuLaunchKernel CU_API_PTSZ_(cuLaunchKernel)
CUresult CUDAAPI cuInit(unsigned int Flags);
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult CUDAAPI cuLaunchKernel(CUfunction f);
`
	h, err := ParseHeader([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Prototypes) != 4 || h.Prototypes[1] != (Prototype{"cuMemAlloc", "CUdeviceptr *dptr, size_t bytesize"}) {
		t.Errorf("prototypes = %+v", h.Prototypes)
	}
	for _, want := range []Mapping{
		{"cuInit", "cuInit", "cuInit"},
		{"cuMemAlloc", "cuMemAlloc_v2", "cuMemAlloc_v2"},
		{"cuMemcpyHtoD", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds"},
		{"cuLaunchKernel", "cuLaunchKernel", "cuLaunchKernel_ptsz"},
	} {
		if have := h.Mappings[want.Name]; have != want {
			t.Errorf("mapping %s = %+v, want %+v", want.Name, have, want)
		}
	}
}

func TestParseHeaderErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"CUresult CUDAAPI cuX(void);\nCUresult CUDAAPI cuX(void);\n",
		"#define cuX cuX_v2\n#define cuX cuX_v3\nCUresult CUDAAPI cuX(void);\n",
		"#define cuY cuY_v2\nCUresult CUDAAPI cuX(void);\n",
	} {
		if _, err := ParseHeader([]byte(in)); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseHeader(%q) error = %v, want ErrSyntax", in, err)
		}
	}
}

func TestProjectFiles(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(root + "/include/cuda.h")
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Prototypes) < 150 {
		t.Errorf("only %d prototypes in include/cuda.h", len(h.Prototypes))
	}
	if strings.Count(string(data), "CUresult CUDAAPI") != len(h.Prototypes) {
		t.Errorf("some declarations of include/cuda.h do not follow the one-line form")
	}
}

func FuzzParseCases(f *testing.F) {
	f.Add([]byte("cuMemAlloc 3020 0 cuMemAlloc_v2\nrules\n\"\" 0 0 NOT_FOUND\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := ParseCases(data)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v is not ErrSyntax", err)
			}
			return
		}
		for _, c := range cases {
			if c.CUDAVersion < 0 || (c.Symbol != NotFound && !isIdent(c.Symbol)) || (c.Name != "" && !isIdent(c.Name)) {
				t.Fatalf("bad case %+v accepted", c)
			}
		}
	})
}

func FuzzParseHeader(f *testing.F) {
	f.Add([]byte("#define cuA CU_API_PTSZ_(cuA_v2)\nCUresult CUDAAPI cuA(int x);\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeader(data)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v is not ErrSyntax", err)
			}
			return
		}
		if len(h.Prototypes) == 0 || len(h.Mappings) != len(h.Prototypes) {
			t.Fatalf("%d prototypes, %d mappings", len(h.Prototypes), len(h.Mappings))
		}
		for _, p := range h.Prototypes {
			if m, ok := h.Mappings[p.Name]; !ok || m.Name != p.Name || m.Symbol == "" {
				t.Fatalf("prototype %s has mapping %+v", p.Name, m)
			}
		}
	})
}
