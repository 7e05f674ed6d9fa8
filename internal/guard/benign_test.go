package guard_test

import (
	"bytes"
	"testing"
)

// TestBenignIdentical runs every testdata kernel unguarded and guarded on the
// interpreter with the same random inputs: every buffer must come out the
// same, and the guarded run must record nothing.
func TestBenignIdentical(t *testing.T) {
	for _, file := range kernelFiles(t) {
		src := readPTX(t, file)
		for _, kernel := range entries(parse(t, src)) {
			spec, ok := kernelSpecs[kernel]
			if !ok {
				t.Errorf("%s: kernel %s has no spec in kernelSpecs", shortName(file), kernel)
				continue
			}
			t.Run(shortName(file)+"/"+kernel, func(t *testing.T) {
				for seed := uint64(1); seed <= 2; seed++ {
					br := newBenignRun(spec, seed)
					want, _ := br.run(t, parse(t, src), nil, kernel)
					gm, res := guardText(t, src)
					got, d := br.run(t, gm, res, kernel)
					for i := range want {
						if !bytes.Equal(got[i], want[i]) {
							t.Errorf("seed %d: argument %d differs guarded vs unguarded", seed, i)
						}
					}
					if r := d.record(t); r.Violated() {
						t.Errorf("seed %d: benign kernel recorded a violation: %+v (%s)", seed, r, res.Function(r.Function))
					}
				}
			})
		}
	}
}
