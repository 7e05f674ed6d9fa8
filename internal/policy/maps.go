package policy

import (
	"encoding/binary"
	"sort"
	"strings"
	"sync"
)

// Maps holds the typed maps of the WebAssembly policies of one driver: one
// int64 per tenant id, by name. A guest keeps each of its maps in its own
// memory (an array of little-endian int64 indexed by tenant id) and
// registers it with map_open, so reading and writing a map costs the guest
// nothing; the host reads it from there, between hooks, for the command
// line. A guest opens a map by a short name and the store keeps it as
// "<policy>.<name>", so a policy reaches only its own maps.
//
// Maps outlive instances: when an instance stops (closed, or ejected), the
// store copies its maps out of the guest's memory, and the next instance of
// the policy that opens them finds them as they were. Only the guest writes
// its maps.
//
// All methods are safe for concurrent use. Lock order: Instance.mu, then
// Maps.mu.
type Maps struct {
	mu sync.Mutex
	m  map[string]*mapEntry
}

// mapEntry is one map: its values while no instance holds it, or where in
// which instance's memory they are.
type mapEntry struct {
	vals []int64
	live *Instance
	ptr  uint32 // n values at ptr in live's memory
	n    uint32
}

// maxMapTenants bounds a map's length (the array a guest may register).
const maxMapTenants = 1 << 16

// NewMaps returns an empty store.
func NewMaps() *Maps { return &Maps{m: map[string]*mapEntry{}} }

// open registers a map of instance i at ptr (n values), copying the map's
// current values there (buf is that guest memory). It returns false if the
// map is held by another instance, and need > n if the map has more values
// than the array holds (nothing is registered then).
func (s *Maps) open(i *Instance, name string, ptr, n uint32, buf []byte) (ok bool, need uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, exists := s.m[name]
	if !exists {
		e = &mapEntry{}
		s.m[name] = e
	}
	switch {
	case e.live == i:
		// The holder moves its array (it grew it and copied the values).
	case e.live != nil:
		return false, 0
	default:
		if len(e.vals) > int(n) {
			return true, uint32(len(e.vals))
		}
		for k := range n {
			var v int64
			if int(k) < len(e.vals) {
				v = e.vals[k]
			}
			binary.LittleEndian.PutUint64(buf[8*k:], uint64(v))
		}
		e.vals = nil
	}
	e.live, e.ptr, e.n = i, ptr, n
	return true, n
}

// release copies the maps an instance holds out of its memory (read(ptr, n)
// returns the bytes, nil if they cannot be read). Called with i.mu held.
func (s *Maps) release(i *Instance, read func(ptr, n uint32) []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.m {
		if e.live != i {
			continue
		}
		e.vals = decodeValues(read(e.ptr, 8*e.n))
		e.live = nil
	}
}

// decodeValues decodes little-endian int64s, without trailing zeros.
func decodeValues(b []byte) []int64 {
	vals := make([]int64, len(b)/8)
	last := -1
	for k := range vals {
		vals[k] = int64(binary.LittleEndian.Uint64(b[8*k:]))
		if vals[k] != 0 {
			last = k
		}
	}
	return vals[:last+1]
}

// MapValues is a snapshot of one map: its full name and its values by
// tenant id (zero values left out).
type MapValues struct {
	Name   string
	Values map[uint32]int64
}

// Snapshot returns the maps whose full name starts with prefix ("" for all),
// sorted by name. A map an instance holds is read from its memory between
// two of its hooks.
func (s *Maps) Snapshot(prefix string) []MapValues {
	s.mu.Lock()
	var out []MapValues
	var live []*Instance
	var liveNames []string
	for name, e := range s.m {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if e.live != nil {
			live, liveNames = append(live, e.live), append(liveNames, name)
			continue
		}
		out = append(out, values(name, e.vals))
	}
	s.mu.Unlock()
	for k, i := range live {
		out = append(out, values(liveNames[k], i.readMap(s, liveNames[k])))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func values(name string, vals []int64) MapValues {
	mv := MapValues{Name: name, Values: map[uint32]int64{}}
	for t, v := range vals {
		if v != 0 {
			mv.Values[uint32(t)] = v
		}
	}
	return mv
}

// Drop deletes the maps of a policy (on unload). Maps an instance still
// holds stay until it stops.
func (s *Maps) Drop(policy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, e := range s.m {
		if strings.HasPrefix(name, policy+".") && e.live == nil {
			delete(s.m, name)
		}
	}
}
