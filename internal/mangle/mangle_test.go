package mangle

import (
	"errors"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// sig writes a parse result in the tables' notation: one letter per
// parameter (A address, C compound, I integer, F floating, N null, U
// unknown), a pack expansion followed by "...", "()" for f(void), "!" for
// ErrUncertain and "-" for ErrNotMangled.
func sig(name string) string {
	s, err := Parse(name)
	switch {
	case errors.Is(err, ErrNotMangled):
		return "-"
	case err != nil:
		return "!"
	case len(s.Params) == 0:
		return "()"
	}
	var b strings.Builder
	for _, p := range s.Params {
		b.WriteByte("UACIFN"[p.Kind])
		if p.Pack {
			b.WriteString("...")
		}
	}
	return b.String()
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		want string
	}{
		// Seen on the H100 (run 14 traces).
		{"_Z11init_curandI19curand_pseudo_stateI17curandStateXORWOWEEvlml", "III"},
		{"_Z11init_curandI19curand_pseudo_stateI24curandStatePhilox4_32_10EEvlml", "III"},
		{"_Z12execute_distI11raw_functor19curand_pseudo_stateI17curandStateXORWOWEiJEEvllllDpT2_", "IIIIC..."},
		{"_Z12execute_distI19interval_64_functor19curand_pseudo_stateI17curandStateXORWOWEmJmmEEvllllDpT2_", "IIIIC..."},
		{"_Z20generate_seed_pseudoI10rng_configI17curandStateXORWOWL14curandOrdering101EEEvyyyS2_PS1_Pj", "IIICAA"},
		{"_Z5counti", "I"},
		{"_Z4iotaPii", "AI"},
		{"_Z5scalePffi", "AFI"},
		{"_Z5saxpyifPKfPf", "IFAA"},
		{"_Z6vecaddPKfS0_Pfi", "ACAI"},
		{"_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE", "C"},
		{"_ZN3cub43CUB_300102_SM_750_800_860_890_900_1000_12006detail11EmptyKernelIvEEvv", "()"},
		{"_ZN15cask__5x_cublas20nopHardwareDetectionEv", "()"},
		// Names the trace cut at 100 characters, and ones with expressions.
		{"_Z12execute_distI12beta_functor19curand_pseudo_stateI17curandStateXORWOWEdJP10array_dataIdES6_EE", "!"},
		{"_Z13gen_sequencedI17curandStateXORWOWjiXadL_Z13curand_noargsIS0_EjPT_iEE10rng_configIS0_L14curan", "!"},
		{"_ZN3cub43CUB_300102_SM_750_800_860_890_900_1000_12006detail6reduce28DeviceReduceSingleTileKernel", "!"},
		// A variable, not a function.
		{"_ZN6cublas8internal15deviceConstantsE", "!"},
		// Builtins, qualified or not.
		{"_Z1fbcahstijlmxyno", "IIIIIIIIIIIIII"},
		{"_Z1ffdeg", "FFFF"},
		{"_Z1fDhDfDdDeDF16_DF16b", "FFFFFF"},
		{"_Z1fDsDiDuw", "IIII"},
		{"_Z1fDn", "N"},
		{"_Z1fKlVKdrm", "IFI"},
		{"_Z1fDB8_DU64_", "II"},
		// Pointers, references, member pointers, functions, arrays.
		{"_Z1fPlRKdOi", "AAA"},
		{"_Z1fPPKc", "A"},
		{"_Z1fM3FooiM3FooFivE", "AA"},
		{"_Z1fPFviEPFvvE", "AA"},
		{"_Z1fRA16_f", "A"},
		{"_Z1fPA_i", "A"},
		{"_Z1fPDn", "A"},
		// Classes, enums, templates, substitutions.
		{"_Z1f3Foo", "C"},
		{"_Z1fN2ns3FooE", "C"},
		{"_Z1fN2ns3FooIiEE", "C"},
		{"_Z1fSt6vectorIiSaIiEE", "C"},
		{"_Z1fNSt3__16vectorIiEE", "C"},
		{"_Z1f3FooS_", "CC"},
		{"_ZN2ns1fEPKcS1_", "AC"},
		{"_Z1fIiEvT_", "C"},
		{"_Z1fIiEvPT_", "A"},
		{"_Z1fIJifEEvDpT_", "C..."},
		{"_Z1fIJifEEvlDpPT_", "IA..."},
		{"_Z1fIJifEEvDpT_i", "C...I"},
		{"_Z1fDv4_f", "C"},
		{"_Z1fCf", "C"},
		{"_Z1fB5cxx11i", "I"},
		{"_ZN12_GLOBAL__N_16kernelEPf", "A"},
		{"_ZL6kernelPfi", "AI"},
		{"_Z1fILi5ELb1EEvi", "I"},
		{"_Z1fILin5EEvi", "I"},
		{"_Z1fILDnEEvi", "I"},
		{"_Z1fIL_Z1gvEEvi", "I"},
		{"_ZN2ns1fIiEEvNS_3BarE", "C"},
		{"_Z6kernelIN4cuda3std4pairIfiEEEvT_PS4_", "CA"},
		{"_ZN3cub6detail6KernelIZ4mainEUlvE_EEvT_", "!"},
		{"_ZN2ns6KernelINS_UlvE_EEEvT_", "C"},
		{"_Z1fu5vtypei", "UI"},
		{"_Z1fU3AS1Pii", "UI"},
		// What it does not read, or what is not a name it can be sure of.
		{"_Z1fz", "!"},
		{"_Z1fiz", "!"},
		{"_Z1fv", "()"},
		{"_Z1fvi", "!"},
		{"_Z1fiv", "!"},
		{"_Z1fIiEv", "!"},
		{"_Z1fDpi", "!"},
		{"_Z1fDpKT_", "C..."},
		{"_Z1fDpDpT_", "!"},
		{"_Z1fIiEvDTfp_E", "!"},
		{"_Z1fIXplLi1ELi2EEEvi", "!"},
		{"_ZZ4mainE1fi", "!"},
		{"_ZN3FooC2Ev", "!"},
		{"_ZN3FooplEi", "!"},
		{"_ZN3FooE", "!"},
		{"_Z1fi.clone", "!"},
		{"_Z1f", "!"},
		{"_Z", "!"},
		{"_Z03fooi", "!"},
		{"_Z3fo", "!"},
		{"_Z999999999999999999999999fooi", "!"},
		{"_Z1fTsN3FooE", "!"},
		{"_Z1fA2_v", "!"},
		{"_Z1fKv", "!"},
		// extern "C" names.
		{"vecadd", "-"},
		{"_z1fi", "-"},
		{"", "-"},
	}
	for _, tt := range tests {
		if got := sig(tt.name); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

// The errors carry their wire codes.
func TestErrorsAreTyped(t *testing.T) {
	if _, err := Parse("f"); !errors.Is(err, ErrNotMangled) || v1.CodeOf(err) != v1.CodeInvalidArgument {
		t.Errorf("Parse(extern C name) = %v", err)
	}
	if _, err := Parse("_Z1fz"); !errors.Is(err, ErrUncertain) || !errors.Is(err, v1.ErrUnsupported) {
		t.Errorf("Parse(varargs) = %v", err)
	}
}

func TestLayout(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want string // kinds per slot, "!" when they cannot be lined up
	}{
		{"_Z11init_curandI19curand_pseudo_stateI17curandStateXORWOWEEvlml", 3, "III"},
		{"_Z11init_curandI19curand_pseudo_stateI17curandStateXORWOWEEvlml", 4, "!"},
		{"_Z11init_curandI19curand_pseudo_stateI17curandStateXORWOWEEvlml", 2, "!"},
		{"_Z1fv", 0, ""},
		{"_Z1fv", 1, "!"},
		{"_Z1fIJifEEvlDpPT_", 1, "I"},
		{"_Z1fIJifEEvlDpPT_", 3, "IAA"},
		{"_Z1fIJifEEvDpT_i", 3, "CCI"},
		{"_Z1fIJifEEvDpT_i", 0, "!"},
		{"_Z1fIJifEEvDpT_DpT0_", 2, "!"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.name)
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.name, err)
		}
		kinds, ok := s.Layout(tt.n)
		got := "!"
		if ok {
			var b strings.Builder
			for _, k := range kinds {
				b.WriteByte("UACIFN"[k])
			}
			got = b.String()
		}
		if got != tt.want {
			t.Errorf("%s with %d parameters: got %q, want %q", tt.name, tt.n, got, tt.want)
		}
	}
}
