package sched_test

import (
	"fmt"

	"github.com/gpuos/gpuos/internal/sched"
)

// oldestFirst is a policy written against the hook interface: it serves the
// ready tenant that has waited longest, counting its dispatches in a map.
type oldestFirst struct {
	sched.Base // the hooks it does not need
	served     *sched.Map
}

func (*oldestFirst) Name() string { return "longest-waiting" }

func (p *oldestFirst) Init(h *sched.Host) error {
	p.served = h.Map("example.served")
	return nil
}

func (p *oldestFirst) OnDispatch(h *sched.Host, e sched.Engine, ready []sched.TenantID) (sched.Choice, error) {
	best := ready[0]
	for _, t := range ready[1:] {
		if h.HeadSeq(t, e) < h.HeadSeq(best, e) {
			best = t
		}
	}
	p.served.Add(best, 1)
	return sched.Choice{Tenant: best}, nil
}

// A policy is added to a scheduler and made active by name; its maps are
// readable from outside (gpuos policy maps).
func ExamplePolicy() {
	s, err := sched.New(sched.Options{Device: &fakeDevice{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	if err := s.Add(&oldestFirst{}, "serves the longest-waiting command first"); err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Use("longest-waiting"); err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range s.Policies() {
		fmt.Printf("%s builtin=%v active=%v\n", p.Name, p.Builtin, p.Active)
	}
	// Output:
	// fifo builtin=true active=false
	// fair builtin=true active=false
	// band builtin=true active=false
	// priority builtin=true active=false
	// longest-waiting builtin=false active=true
}
