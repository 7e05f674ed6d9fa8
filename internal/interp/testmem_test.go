package interp

// mapMemory is a Memory made of host byte slices, for tests: each
// mapping covers [base, base+len(bytes)). It is safe for concurrent use once
// built (Map must not run concurrently with Slice).
type mapMemory struct {
	ranges []memRange
}

type memRange struct {
	base uint64
	mem  []byte
	ro   bool
}

// Map makes b visible at base. Ranges must not overlap.
func (m *mapMemory) Map(base uint64, b []byte) { m.ranges = append(m.ranges, memRange{base, b, false}) }

// MapReadOnly makes b visible at base for reading only.
func (m *mapMemory) MapReadOnly(base uint64, b []byte) {
	m.ranges = append(m.ranges, memRange{base, b, true})
}

// Slice implements Memory.
func (m *mapMemory) Slice(addr uint64, n int, write bool) ([]byte, error) {
	for i := range m.ranges {
		r := &m.ranges[i]
		if addr >= r.base && addr-r.base < uint64(len(r.mem)) && addr-r.base+uint64(n) <= uint64(len(r.mem)) {
			if write && r.ro {
				return nil, errReadOnly
			}
			off := addr - r.base
			return r.mem[off : off+uint64(n) : off+uint64(n)], nil
		}
	}
	return nil, errUnmapped
}

type memError string

func (e memError) Error() string { return string(e) }

const (
	errUnmapped = memError("address not mapped")
	errReadOnly = memError("address mapped read-only")
)
