package driver

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		have string
		want []int // nil: an error
	}{
		{"0", []int{0}},
		{"15", []int{15}},
		{"12-15", []int{12, 13, 14, 15}},
		{"3,7", []int{3, 7}},
		{"0-1, 4", []int{0, 1, 4}},
		{"2,1-3", []int{2, 1, 3}},
		{"1023", []int{1023}},
		{"", nil},
		{"1024", nil},
		{"-1", nil},
		{"3-1", nil},
		{"1,", nil},
		{"a", nil},
		{"1-", nil},
		{"1-2-3", nil},
	} {
		got, err := parseCPUList(tc.have)
		if tc.want == nil {
			if err == nil {
				t.Errorf("parseCPUList(%q) = %v, want an error", tc.have, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseCPUList(%q) = %v, %v, want %v", tc.have, got, err, tc.want)
		}
	}
}

// FuzzParseCPUList: a list either fails or names distinct CPUs in range,
// which read back as a list give the same CPUs.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "12-15", "3,7", "0-1, 4", "1-2-3", "1023"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		cpus, err := parseCPUList(list)
		if err != nil {
			return
		}
		if len(cpus) == 0 {
			t.Fatalf("parseCPUList(%q) gave no CPUs and no error", list)
		}
		seen := map[int]bool{}
		parts := make([]string, len(cpus))
		for i, c := range cpus {
			if c < 0 || c > maxCPU || seen[c] {
				t.Fatalf("parseCPUList(%q) = %v: CPU %d out of range or repeated", list, cpus, c)
			}
			seen[c] = true
			parts[i] = strconv.Itoa(c)
		}
		again, err := parseCPUList(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("parseCPUList(%q) = %v; read back: %v, %v", list, cpus, again, err)
		}
	})
}
