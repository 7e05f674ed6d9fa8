package mem

import (
	"fmt"
	"slices"
)

// Pressure describes a shortage of device memory: what the on_pressure hook
// is asked about.
type Pressure struct {
	// Need is how many bytes must be freed (beyond what the pool gave back).
	Need uint64
	// Tenant and Window are whose request needs the memory: an allocation in
	// that window, or making it resident before its next dispatch. Window is
	// 0 when no window asks (an attachment's owner being brought back).
	Tenant string
	Window uint64
	// SwapIn reports that the request makes Window resident. Chunks mapped in
	// Window are then not offered: evicting them would undo the request.
	SwapIn bool
}

// VictimChooser picks which chunks to evict when device memory runs short:
// the on_pressure hook. The manager calls it with the chunks it may evict,
// least recently used first, and evicts the ones it returns (indexes into
// cands), in that order, until Need bytes are free; if they are not enough it
// asks again with what is left. An error, an index out of range or repeated,
// or an answer that frees nothing makes the manager fall back to
// LowestPriorityLRU for that decision (and count it in DeviceStats).
//
// It is called with no lock of the manager held but one that serialises
// evictions, so it must not call the manager. A policy engine implements it
// to run operators' policies (see internal/policy).
type VictimChooser interface {
	ChooseVictims(p Pressure, cands []Candidate) ([]int, error)
}

// VictimFunc adapts a function to VictimChooser.
type VictimFunc func(p Pressure, cands []Candidate) ([]int, error)

// ChooseVictims calls f.
func (f VictimFunc) ChooseVictims(p Pressure, cands []Candidate) ([]int, error) { return f(p, cands) }

// LowestPriorityLRU is the built-in victim choice: chunks of other windows
// before the requester's own, then the lowest tenant priority first, then the
// least recently used; enough of them to cover Need.
type LowestPriorityLRU struct{}

// ChooseVictims implements VictimChooser.
func (LowestPriorityLRU) ChooseVictims(p Pressure, cands []Candidate) ([]int, error) {
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	own := func(c Candidate) int {
		if p.Window != 0 && c.Window == p.Window {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := cands[i], cands[j]
		switch {
		case own(a) != own(b):
			return own(a) - own(b)
		case a.Priority != b.Priority:
			return a.Priority - b.Priority
		case a.LastUse < b.LastUse:
			return -1
		case a.LastUse > b.LastUse:
			return 1
		}
		return 0
	})
	var freed uint64
	for k, i := range order {
		if freed >= p.Need {
			return order[:k], nil
		}
		freed += cands[i].Bytes
	}
	return order, nil
}

// validVictims checks a chooser's answer: indexes in range, none repeated,
// at least one.
func validVictims(idx []int, n int) error {
	if len(idx) == 0 {
		return fmt.Errorf("no victim chosen among %d candidates", n)
	}
	seen := make(map[int]bool, len(idx))
	for _, i := range idx {
		if i < 0 || i >= n {
			return fmt.Errorf("victim index %d out of range [0, %d)", i, n)
		}
		if seen[i] {
			return fmt.Errorf("victim index %d chosen twice", i)
		}
		seen[i] = true
	}
	return nil
}
