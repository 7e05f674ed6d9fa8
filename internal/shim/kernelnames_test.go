package shim

import (
	"slices"
	"testing"
)

func TestImageKernels(t *testing.T) {
	fat := readTestdata(t, "fatbin/vecadd.fatbin")
	zfat := readTestdata(t, "fatbin/vecadd.compressed.fatbin")
	cubin := readTestdata(t, "fatbin/vecadd.sm_90.cubin")
	versioned := append([]byte(nil), cubin...)
	versioned[20] = 123 // e_version holding a CUDA version, as cuBLAS 13's cubins do
	for _, tc := range []struct {
		name         string
		image        []byte
		major, minor int
		have         []string
		ok           bool
	}{
		{"PTX", []byte(".version 9.0\n.target sm_80\n.visible .entry vecadd(\n.param .u64 a)\n{\nret;\n}\n"), 9, 0, []string{"vecadd"}, true},
		{"PTX entries in order, once each", []byte(".version 9.0\n.entry b (\n)\n{ret;}\n.weak .entry a(){ret;}\n.entry b(\n)\n"), 9, 0, []string{"b", "a"}, true},
		{"PTX comments and look-alikes", []byte(".version 9.0\n// .entry commented(\n.func .entryish x(\nfoo.entry y(\n.entry\tz_$1{\n"), 9, 0, []string{"z_$1"}, true},
		{"PTX of no kernel", []byte(".version 9.0\n.target sm_90\n.func f()\n{\nret;\n}\n"), 9, 0, nil, true},
		{"fat binary, the device's cubin", fat, 9, 0, []string{"vecadd"}, true},
		{"fat binary with nothing for the device", fat, 7, 5, nil, false},
		{"compressed fat binary, PTX for a newer device", zfat, 8, 6, []string{"vecadd"}, true},
		{"cubin", cubin, 9, 0, []string{"vecadd"}, true},
		{"cubin with a CUDA version in e_version", versioned, 9, 0, []string{"vecadd"}, true},
		{"truncated cubin", cubin[:100], 9, 0, nil, false},
		{"neither", []byte("hello"), 9, 0, nil, false},
	} {
		have, ok := imageKernels(tc.image, tc.major, tc.minor)
		if ok != tc.ok || !slices.Equal(have, tc.have) {
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, have, ok, tc.have, tc.ok)
		}
	}
}

func FuzzImageKernels(f *testing.F) {
	f.Add([]byte(".version 9.0\n.visible .entry k(\n)\n{\nret;\n}\n"), 9, 0)
	f.Add(readTestdata(f, "fatbin/vecadd.compressed.fatbin"), 8, 0)
	f.Add(readTestdata(f, "fatbin/vecadd.sm_90.cubin"), 9, 0)
	f.Fuzz(func(t *testing.T, image []byte, major, minor int) {
		names, ok := imageKernels(image, major, minor)
		if !ok && names != nil {
			t.Fatalf("names %q with ok false", names)
		}
		seen := make(map[string]bool)
		for _, n := range names {
			if n == "" || seen[n] {
				t.Fatalf("empty or repeated name in %q", names)
			}
			seen[n] = true
		}
	})
}
