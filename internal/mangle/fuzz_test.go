package mangle

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: any text is parsed without a panic, into a signature whose
// kinds are valid and that lines up with its own parameter count, or into
// one of the package's errors.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"_Z11init_curandI19curand_pseudo_stateI17curandStateXORWOWEEvlml",
		"_Z12execute_distI11raw_functor19curand_pseudo_stateI17curandStateXORWOWEiJEEvllllDpT2_",
		"_Z20generate_seed_pseudoI10rng_configI17curandStateXORWOWL14curandOrdering101EEEvyyyS2_PS1_Pj",
		"_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE",
		"_Z6vecaddPKfS0_Pfi", "_Z1fM3FooFivE", "_Z1fIL_Z1gvEEvi", "_ZN2ns6KernelINS_UlvE_EEEvT_",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		s, err := Parse(name)
		if err != nil {
			if !errors.Is(err, ErrNotMangled) && !errors.Is(err, ErrUncertain) {
				t.Fatalf("Parse(%q): unexpected error %v", name, err)
			}
			if len(s.Params) != 0 {
				t.Fatalf("Parse(%q): parameters with an error", name)
			}
			return
		}
		packs := 0
		for _, p := range s.Params {
			if p.Kind > Null {
				t.Fatalf("Parse(%q): kind %d", name, p.Kind)
			}
			if p.Pack {
				packs++
			}
		}
		if _, ok := s.Layout(len(s.Params)); ok != (packs <= 1) {
			t.Fatalf("Parse(%q) = %v: Layout of its own count ok=%v with %d packs", name, s.Params, ok, packs)
		}
	})
}

// FuzzRoundTrip: a name built from the fuzzer's bytes out of the grammar's
// pieces, whose parameters' kinds are known, parses to exactly those kinds
// or to ErrUncertain: never to other kinds.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3})
	f.Add([]byte{0x80, 5, 9, 2, 2, 11, 13, 7})
	f.Add([]byte{0x81, 12, 12, 4, 6, 8, 10})
	f.Fuzz(func(t *testing.T, b []byte) {
		g := &gen{b: b}
		name, want := g.name()
		s, err := Parse(name)
		if errors.Is(err, ErrUncertain) {
			return
		}
		if err != nil {
			t.Fatalf("Parse(%q): %v", name, err)
		}
		var got strings.Builder
		for _, p := range s.Params {
			got.WriteByte("UACIFN"[p.Kind])
		}
		if got.String() != want {
			t.Fatalf("Parse(%q) = %s, want %s", name, got.String(), want)
		}
	})
}

// gen writes mangled names from a byte stream.
type gen struct {
	b []byte
	i int
}

func (g *gen) next() byte {
	if g.i >= len(g.b) {
		return 0
	}
	c := g.b[g.i]
	g.i++
	return c
}

func (g *gen) more() bool { return g.i < len(g.b) }

// name returns a function name and its parameters' kinds in sig's letters.
func (g *gen) name() (string, string) {
	var b, want strings.Builder
	b.WriteString("_Z")
	head := g.next()
	switch head % 4 {
	case 0:
		b.WriteString("6kernel")
	case 1:
		b.WriteString("N2ns6kernelE")
	case 2:
		b.WriteString("6kernelI")
		g.typ(&b, 0)
		b.WriteString("Ev")
	default:
		b.WriteString("N2ns6kernelIJiP3FooEEEv")
	}
	n := 0
	for g.more() && n < 16 {
		want.WriteByte(g.typ(&b, 0))
		n++
	}
	if n == 0 {
		b.WriteByte('v')
	}
	return b.String(), want.String()
}

// typ appends a type and returns its kind's letter.
func (g *gen) typ(b *strings.Builder, depth int) byte {
	c := g.next()
	if depth > 4 {
		c %= 2
	}
	switch c % 14 {
	case 0:
		b.WriteByte("bcahstijlmxynow"[int(c/14)%15])
		return 'I'
	case 1:
		b.WriteString([]string{"f", "d", "e", "g", "Dh", "DF16_", "DF16b", "Dd"}[int(c/14)%8])
		return 'F'
	case 2:
		b.WriteByte('P')
		g.typ(b, depth+1)
		return 'A'
	case 3:
		b.WriteByte("RO"[int(c/14)%2])
		g.typ(b, depth+1)
		return 'A'
	case 4:
		b.WriteString([]string{"K", "V", "VK", "r"}[int(c/14)%4])
		b.WriteByte("ilmy"[int(c/14)%4])
		return 'I'
	case 5:
		b.WriteString("3Foo")
		return 'C'
	case 6:
		b.WriteString("N2ns3FooE")
		return 'C'
	case 7:
		b.WriteString([]string{"T_", "T0_", "T1_"}[int(c/14)%3])
		return 'C'
	case 8:
		b.WriteString([]string{"S_", "S0_", "S1_"}[int(c/14)%3])
		return 'C'
	case 9:
		b.WriteString("3FooI")
		g.typ(b, depth+1)
		b.WriteByte('E')
		return 'C'
	case 10:
		b.WriteString("Dn")
		return 'N'
	case 11:
		b.WriteString("PF")
		g.typ(b, depth+1)
		g.typ(b, depth+1)
		b.WriteByte('E')
		return 'A'
	case 12:
		b.WriteString("PA4_")
		g.typ(b, depth+1)
		return 'A'
	default:
		b.WriteString("M3Foo")
		g.typ(b, depth+1)
		return 'A'
	}
}
