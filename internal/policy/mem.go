package policy

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gpuos/gpuos/internal/mem"
)

// MemorySwitch runs the memory hooks (on_pressure, on_alloc) of the policy
// in use, if any, for a memory manager: it implements mem.VictimChooser, and
// the driver passes it as mem.Options.Victims. Use and Clear swap the
// policy live. A policy that fails (traps, overruns, answers nonsense, or
// names no victim when there are candidates) is ejected at once: the hook
// returns the error, the memory manager makes that decision with its
// built-in LowestPriorityLRU, and every later decision is the built-in's
// until a policy is used again.
type MemorySwitch struct {
	opts MemoryOptions

	mu    sync.Mutex
	inst  *Instance
	why   string // why the last policy was ejected
	cands []Candidate
	cur   atomic.Pointer[Instance] // inst, for Interrupt (which must not wait for mu)
}

// MemoryOptions configure a MemorySwitch.
type MemoryOptions struct {
	// TenantID maps the memory manager's tenant names to the ids the
	// scheduling hooks use. Nil, or a name it does not know: NoTenant.
	TenantID func(name string) (uint32, bool)
	// Env is what the host functions read during memory hooks. Nil: they
	// read zero (the scheduler's state is not available to memory hooks,
	// which run outside the scheduler's lock).
	Env Env
	// OnEject, if set, is told (on its own goroutine) when a policy is
	// ejected.
	OnEject func(policy string, err error)
}

// NewMemorySwitch returns a switch running the built-in choice.
func NewMemorySwitch(opts MemoryOptions) *MemorySwitch { return &MemorySwitch{opts: opts} }

// Use makes the instance's memory hooks decide from now on. It must
// implement on_pressure.
func (s *MemorySwitch) Use(i *Instance) error {
	if !i.Has(HookPressure) {
		return fmt.Errorf("policy %q: a memory policy must export %s: %w", i.m.name, hookDefs[HookPressure].name, ErrNoHook)
	}
	s.mu.Lock()
	s.inst, s.why = i, ""
	s.cur.Store(i)
	s.mu.Unlock()
	return nil
}

// Clear returns to the built-in choice; it returns the instance that was
// in use (nil if none).
func (s *MemorySwitch) Clear() *Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.inst
	s.inst = nil
	s.cur.Store(nil)
	return i
}

// Active returns the name of the policy in use ("" for the built-in) and why
// the last one was ejected, if it was.
func (s *MemorySwitch) Active() (name, ejected string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst != nil {
		name = s.inst.m.name
	}
	return name, s.why
}

// Interrupt stops a memory hook in progress (the instance's own deadline
// does too; this is for a caller with a shorter one).
func (s *MemorySwitch) Interrupt() {
	if i := s.cur.Load(); i != nil {
		i.Interrupt()
	}
}

func (s *MemorySwitch) id(name string) uint32 {
	if s.opts.TenantID != nil {
		if id, ok := s.opts.TenantID(name); ok {
			return id
		}
	}
	return NoTenant
}

// eject drops a failed instance. Called with mu held.
func (s *MemorySwitch) eject(i *Instance, err error) {
	if s.inst != i {
		return
	}
	s.inst, s.why = nil, err.Error()
	s.cur.Store(nil)
	if s.opts.OnEject != nil {
		go s.opts.OnEject(i.m.name, err)
	}
}

// ChooseVictims implements mem.VictimChooser. Without a policy in use it
// answers with mem.LowestPriorityLRU.
func (s *MemorySwitch) ChooseVictims(p mem.Pressure, cands []mem.Candidate) ([]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.inst
	if i == nil {
		return mem.LowestPriorityLRU{}.ChooseVictims(p, cands)
	}
	s.cands = s.cands[:0]
	for _, c := range cands {
		var flags uint32
		if c.Shared {
			flags |= CandidateShared
		}
		if c.Slab {
			flags |= CandidateSlab
		}
		s.cands = append(s.cands, Candidate{Tenant: s.id(c.Tenant), Priority: int32(c.Priority), Flags: flags,
			Bytes: c.Bytes, LastUse: c.LastUse, Window: c.Window})
	}
	tenant := uint32(NoTenant)
	if p.Tenant != "" {
		tenant = s.id(p.Tenant)
	}
	victims, err := i.OnPressure(s.opts.Env, Pressure{Need: p.Need, Tenant: tenant, Window: p.Window, SwapIn: p.SwapIn}, s.cands)
	if err == nil && len(victims) == 0 && len(cands) > 0 {
		err = i.reject("on_pressure", fmt.Errorf("named no victim among %d candidates: %w", len(cands), ErrInvalidDecision))
	}
	if err != nil {
		s.eject(i, err)
		return nil, err
	}
	return victims, nil
}

// CheckAlloc asks the policy in use whether a tenant may allocate: true
// without a policy, or if it does not implement on_alloc. A failing policy
// is ejected and the allocation allowed.
func (s *MemorySwitch) CheckAlloc(tenant string, bytes, used, quota uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.inst
	if i == nil {
		return true
	}
	ok, err := i.OnAlloc(s.opts.Env, AllocEvent{Tenant: s.id(tenant), Bytes: bytes, Used: used, Quota: quota})
	if err != nil {
		s.eject(i, err)
		return true
	}
	return ok
}

var _ mem.VictimChooser = (*MemorySwitch)(nil)
