package v1

// Scheduling: policies and virtual GPUs. These requests are accepted by the
// manager (from clients; changing anything needs an operator) and on the
// control endpoint (the manager passes them on to each driver).

// PolicyList asks which scheduling policies there are and which is active;
// the reply is Policies.
type PolicyList struct{}

func (*PolicyList) Type() Type              { return TypePolicyList }
func (*PolicyList) Encode(*Encoder)         {}
func (*PolicyList) Decode(d *Decoder) error { return d.Err() }

// PolicyInfo describes one scheduling policy.
type PolicyInfo struct {
	Name        string
	Description string
	Builtin     bool
	Active      bool
	Ejected     string // why it was last replaced for misbehaving; "" if never
}

// minPolicyInfoSize is the encoded size of a zero PolicyInfo.
const minPolicyInfoSize = 4 + 4 + 1 + 1 + 4

func (p *PolicyInfo) encode(e *Encoder) {
	e.PutString(p.Name)
	e.PutString(p.Description)
	e.PutBool(p.Builtin)
	e.PutBool(p.Active)
	e.PutString(p.Ejected)
}

func (p *PolicyInfo) decode(d *Decoder) {
	p.Name = d.Text()
	p.Description = d.Text()
	p.Builtin = d.Bool()
	p.Active = d.Bool()
	p.Ejected = d.Text()
}

// Policies answers PolicyList.
type Policies struct {
	Active   string
	Fallback string // the built-in that takes over from a misbehaving policy
	Policies []PolicyInfo
}

func (*Policies) Type() Type { return TypePolicies }
func (m *Policies) Encode(e *Encoder) {
	e.PutString(m.Active)
	e.PutString(m.Fallback)
	e.PutCount(len(m.Policies))
	for i := range m.Policies {
		m.Policies[i].encode(e)
	}
}
func (m *Policies) Decode(d *Decoder) error {
	m.Active = d.Text()
	m.Fallback = d.Text()
	m.Policies = nil
	if n := d.Count(minPolicyInfoSize); n > 0 {
		m.Policies = make([]PolicyInfo, n)
		for i := range m.Policies {
			m.Policies[i].decode(d)
		}
	}
	return d.Err()
}

// PolicyUse makes a policy active. Queued work is kept, in order.
type PolicyUse struct {
	Name string
}

func (*PolicyUse) Type() Type                { return TypePolicyUse }
func (m *PolicyUse) Encode(e *Encoder)       { e.PutString(m.Name) }
func (m *PolicyUse) Decode(d *Decoder) error { m.Name = d.Text(); return d.Err() }

// ShareFields says which fields of a SetShare apply.
type ShareFields uint32

// Share fields.
const (
	ShareCompute ShareFields = 1 << iota
	ShareCopy
	ShareMemory
	ShareClass
	knownShareFields = ShareCompute | ShareCopy | ShareMemory | ShareClass
)

// SetShare changes a tenant's virtual GPU: its compute and copy-bandwidth
// weights, its memory share (bytes) and its scheduling class (-1 low, 0
// normal, 1 high). Only the fields named in Fields change. The driver checks
// the values (InvalidArgument), the codec only the field bits.
type SetShare struct {
	Tenant  string
	Fields  ShareFields
	Compute uint32
	Copy    uint32
	Memory  uint64
	Class   int32
}

func (*SetShare) Type() Type { return TypeSetShare }
func (m *SetShare) Encode(e *Encoder) {
	e.PutString(m.Tenant)
	e.PutUint32(uint32(m.Fields))
	e.PutUint32(m.Compute)
	e.PutUint32(m.Copy)
	e.PutUint64(m.Memory)
	e.PutInt32(m.Class)
}
func (m *SetShare) Decode(d *Decoder) error {
	m.Tenant = d.Text()
	m.Fields = ShareFields(d.Uint32())
	if m.Fields&^knownShareFields != 0 {
		d.Failf("share fields %#x: unknown bits", uint32(m.Fields))
	}
	m.Compute = d.Uint32()
	m.Copy = d.Uint32()
	m.Memory = d.Uint64()
	m.Class = d.Int32()
	return d.Err()
}

// TenantStats asks for each tenant's virtual GPU and how it is served; the
// reply is Tenants.
type TenantStats struct{}

func (*TenantStats) Type() Type              { return TypeTenantStats }
func (*TenantStats) Encode(*Encoder)         {}
func (*TenantStats) Decode(d *Decoder) error { return d.Err() }

// TenantStat is one tenant on one device. Shares and targets are parts per
// million: Share of the engine's recent use, Target what the tenant's weight
// entitles it to among the tenants with work.
type TenantStat struct {
	Name          string
	Device        uint32
	Class         int32
	ClassSet      bool // the class is configured, not taken from the sessions' nice values
	Compute       uint32
	Copy          uint32
	Memory        uint64
	Sessions      uint32
	GPUTimeNs     uint64
	CopyBytes     uint64
	ComputeShare  uint32
	ComputeTarget uint32
	CopyShare     uint32
	CopyTarget    uint32
	QueueDelayNs  uint64 // total, both engines
	Dispatched    uint64
	InFlight      uint32
	Queued        uint32
}

// minTenantStatSize is the encoded size of a zero TenantStat.
const minTenantStatSize = 4 + 4 + 4 + 1 + 4 + 4 + 8 + 4 + 8 + 8 + 4*4 + 8 + 8 + 4 + 4

func (s *TenantStat) encode(e *Encoder) {
	e.PutString(s.Name)
	e.PutUint32(s.Device)
	e.PutInt32(s.Class)
	e.PutBool(s.ClassSet)
	e.PutUint32(s.Compute)
	e.PutUint32(s.Copy)
	e.PutUint64(s.Memory)
	e.PutUint32(s.Sessions)
	e.PutUint64(s.GPUTimeNs)
	e.PutUint64(s.CopyBytes)
	e.PutUint32(s.ComputeShare)
	e.PutUint32(s.ComputeTarget)
	e.PutUint32(s.CopyShare)
	e.PutUint32(s.CopyTarget)
	e.PutUint64(s.QueueDelayNs)
	e.PutUint64(s.Dispatched)
	e.PutUint32(s.InFlight)
	e.PutUint32(s.Queued)
}

func (s *TenantStat) decode(d *Decoder) {
	s.Name = d.Text()
	s.Device = d.Uint32()
	s.Class = d.Int32()
	s.ClassSet = d.Bool()
	s.Compute = d.Uint32()
	s.Copy = d.Uint32()
	s.Memory = d.Uint64()
	s.Sessions = d.Uint32()
	s.GPUTimeNs = d.Uint64()
	s.CopyBytes = d.Uint64()
	s.ComputeShare = d.Uint32()
	s.ComputeTarget = d.Uint32()
	s.CopyShare = d.Uint32()
	s.CopyTarget = d.Uint32()
	s.QueueDelayNs = d.Uint64()
	s.Dispatched = d.Uint64()
	s.InFlight = d.Uint32()
	s.Queued = d.Uint32()
}

// Tenants answers TenantStats.
type Tenants struct {
	Tenants []TenantStat
}

func (*Tenants) Type() Type { return TypeTenants }
func (m *Tenants) Encode(e *Encoder) {
	e.PutCount(len(m.Tenants))
	for i := range m.Tenants {
		m.Tenants[i].encode(e)
	}
}
func (m *Tenants) Decode(d *Decoder) error {
	m.Tenants = nil
	if n := d.Count(minTenantStatSize); n > 0 {
		m.Tenants = make([]TenantStat, n)
		for i := range m.Tenants {
			m.Tenants[i].decode(d)
		}
	}
	return d.Err()
}
