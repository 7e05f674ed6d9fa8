package v1

// Policy engine requests: loading, unloading and inspecting WebAssembly
// policies. Like the scheduling requests they are accepted by the manager
// (from the daemon's operator) and, passed on by it, by every driver on the
// control endpoint.

// PolicyLoad loads a WebAssembly policy module under Name (1 to 64 of a-z,
// 0-9, '.', '_', '-'; not a built-in policy's name). The driver verifies and
// compiles it; PolicyUse then makes it active. The reply is PolicyLoaded.
type PolicyLoad struct {
	Name   string
	Module []byte
}

func (*PolicyLoad) Type() Type { return TypePolicyLoad }
func (m *PolicyLoad) Encode(e *Encoder) {
	e.PutString(m.Name)
	e.PutBytes(m.Module)
}
func (m *PolicyLoad) Decode(d *Decoder) error {
	m.Name = d.Text()
	m.Module = d.Bytes()
	return d.Err()
}

// PolicyLoaded describes a policy that was loaded.
type PolicyLoaded struct {
	Name   string
	SHA256 string // of the module, hex
	Size   uint32 // bytes
	// Hooks is the set of hooks the module implements, bit i for hook i of
	// the ABI (docs/policies.md): init, session_open, submit, dispatch,
	// complete, preempt, tick, alloc, pressure, fault.
	Hooks uint32
	// CheckSites is how many fuel checks the load-time pass inserted.
	CheckSites uint32
}

func (*PolicyLoaded) Type() Type { return TypePolicyLoaded }
func (m *PolicyLoaded) Encode(e *Encoder) {
	e.PutString(m.Name)
	e.PutString(m.SHA256)
	e.PutUint32(m.Size)
	e.PutUint32(m.Hooks)
	e.PutUint32(m.CheckSites)
}
func (m *PolicyLoaded) Decode(d *Decoder) error {
	m.Name = d.Text()
	m.SHA256 = d.Text()
	m.Size = d.Uint32()
	m.Hooks = d.Uint32()
	m.CheckSites = d.Uint32()
	return d.Err()
}

// PolicyUnload unloads a loaded policy; if it is active, the fallback
// built-in policy takes over first, losing no command. The reply is Empty.
type PolicyUnload struct {
	Name string
}

func (*PolicyUnload) Type() Type                { return TypePolicyUnload }
func (m *PolicyUnload) Encode(e *Encoder)       { e.PutString(m.Name) }
func (m *PolicyUnload) Decode(d *Decoder) error { m.Name = d.Text(); return d.Err() }

// PolicyMaps asks for the typed maps whose name starts with Prefix ("" for
// all): the scheduler's own, the built-in policies' and the loaded
// policies'. The reply is PolicyMapValues.
type PolicyMaps struct {
	Prefix string
}

func (*PolicyMaps) Type() Type                { return TypePolicyMaps }
func (m *PolicyMaps) Encode(e *Encoder)       { e.PutString(m.Prefix) }
func (m *PolicyMaps) Decode(d *Decoder) error { m.Prefix = d.Text(); return d.Err() }

// MapKind says whose a map is.
type MapKind uint8

// Map kinds.
const (
	MapOfHost    MapKind = 1 // kept by the scheduler (weights, usage, queue lengths)
	MapOfBuiltin MapKind = 2 // a built-in policy's
	MapOfLoaded  MapKind = 3 // a loaded (WebAssembly) policy's
)

func (k MapKind) valid() bool { return k >= MapOfHost && k <= MapOfLoaded }

// MapValue is one tenant's value in a map.
type MapValue struct {
	Tenant string
	Value  int64
}

// MapInfo is one map on one device.
type MapInfo struct {
	Device uint32
	Name   string
	Kind   MapKind
	Values []MapValue
}

// minMapInfoSize and minMapValueSize are the encoded sizes of zero values.
const (
	minMapInfoSize  = 4 + 4 + 1 + 4
	minMapValueSize = 4 + 8
)

func (m *MapInfo) encode(e *Encoder) {
	e.PutUint32(m.Device)
	e.PutString(m.Name)
	e.PutUint8(uint8(m.Kind))
	e.PutCount(len(m.Values))
	for _, v := range m.Values {
		e.PutString(v.Tenant)
		e.PutInt64(v.Value)
	}
}

func (m *MapInfo) decode(d *Decoder) {
	m.Device = d.Uint32()
	m.Name = d.Text()
	m.Kind = MapKind(d.Uint8())
	if !m.Kind.valid() && d.Err() == nil {
		d.Failf("map kind %d", m.Kind)
	}
	m.Values = nil
	if n := d.Count(minMapValueSize); n > 0 {
		m.Values = make([]MapValue, n)
		for i := range m.Values {
			m.Values[i].Tenant = d.Text()
			m.Values[i].Value = d.Int64()
		}
	}
}

// PolicyMapValues answers PolicyMaps.
type PolicyMapValues struct {
	Maps []MapInfo
}

func (*PolicyMapValues) Type() Type { return TypePolicyMapValues }
func (m *PolicyMapValues) Encode(e *Encoder) {
	e.PutCount(len(m.Maps))
	for i := range m.Maps {
		m.Maps[i].encode(e)
	}
}
func (m *PolicyMapValues) Decode(d *Decoder) error {
	m.Maps = nil
	if n := d.Count(minMapInfoSize); n > 0 {
		m.Maps = make([]MapInfo, n)
		for i := range m.Maps {
			m.Maps[i].decode(d)
		}
	}
	return d.Err()
}
