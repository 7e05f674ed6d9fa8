package v1

// Message is one message of the protocol: a request, a reply or an Error.
// Encode appends the payload (without header); Decode reads every field back,
// overwriting the receiver, and returns d.Err(). Decode does not check for
// trailing bytes: Unmarshal and Decoder.Decode do. Byte-slice fields alias the
// decoded payload.
type Message interface {
	Type() Type
	Encode(e *Encoder)
	Decode(d *Decoder) error
}

func (d *Decoder) sessionRights() Rights {
	r := Rights(d.Uint64())
	if r&^AllSessionRights != 0 {
		d.Failf("unknown session rights %#x", uint64(r&^AllSessionRights))
	}
	return r
}

func (d *Decoder) bufferRights() Rights {
	r := Rights(d.Uint64())
	if r&^AllBufferRights != 0 {
		d.Failf("unknown buffer rights %#x", uint64(r&^AllBufferRights))
	}
	return r
}

func (d *Decoder) strings() []string {
	n := d.Count(4)
	if n == 0 {
		return nil
	}
	s := make([]string, n)
	for i := range s {
		s[i] = d.Text()
	}
	return s
}

func (e *Encoder) putStrings(s []string) {
	e.PutCount(len(s))
	for _, v := range s {
		e.PutString(v)
	}
}

// Empty is the reply to a request that answers nothing but success.
type Empty struct{}

func (*Empty) Type() Type              { return TypeEmpty }
func (*Empty) Encode(*Encoder)         {}
func (*Empty) Decode(d *Decoder) error { return d.Err() }

// ---- Handshake -------------------------------------------------------------

// Hello is the first frame on every connection. NewHello fills Magic and the
// version.
type Hello struct {
	Magic   uint32 // must be Magic
	Major   uint16
	Minor   uint16
	Token   string // optional tenant credential (GPUOS_TOKEN)
	Program string // the client program's name, for ps, top and the audit log
	Role    Role
	Tenant  string // tenant to act as (GPUOS_TENANT); empty: the first that admits the client
}

// NewHello returns a Hello of this protocol version.
func NewHello(role Role, token, program string) *Hello {
	return &Hello{Magic: Magic, Major: Major, Minor: Minor, Token: token, Program: program, Role: role}
}

// Compatible returns nil if a peer saying h can be served by this version, and a
// VersionMismatch error otherwise.
func (h *Hello) Compatible() error {
	if h.Major != Major {
		return Errorf(CodeVersionMismatch, "peer speaks protocol %d.%d, this side %d.%d", h.Major, h.Minor, Major, Minor)
	}
	return nil
}

func (*Hello) Type() Type { return TypeHello }
func (m *Hello) Encode(e *Encoder) {
	e.PutUint32(m.Magic)
	e.PutUint16(m.Major)
	e.PutUint16(m.Minor)
	e.PutString(m.Token)
	e.PutString(m.Program)
	e.PutUint8(uint8(m.Role))
	e.PutString(m.Tenant)
}
func (m *Hello) Decode(d *Decoder) error {
	m.Magic = d.Uint32()
	if d.Err() == nil && m.Magic != Magic {
		d.Failf("hello magic %#x, want %#x", m.Magic, Magic)
	}
	m.Major = d.Uint16()
	m.Minor = d.Uint16()
	m.Token = d.Text()
	m.Program = d.Text()
	m.Role = Role(d.Uint8())
	if d.Err() == nil && !m.Role.Valid() {
		d.Failf("hello role %d", m.Role)
	}
	m.Tenant = d.Text()
	return d.Err()
}

// HelloReply answers Hello with the server's version and identity.
type HelloReply struct {
	Major   uint16
	Minor   uint16
	Server  string // e.g. "gpuos 0.1.0 manager"
	Backend string // "cuda" or "sim"
}

func (*HelloReply) Type() Type { return TypeHelloReply }
func (m *HelloReply) Encode(e *Encoder) {
	e.PutUint16(m.Major)
	e.PutUint16(m.Minor)
	e.PutString(m.Server)
	e.PutString(m.Backend)
}
func (m *HelloReply) Decode(d *Decoder) error {
	m.Major = d.Uint16()
	m.Minor = d.Uint16()
	m.Server = d.Text()
	m.Backend = d.Text()
	return d.Err()
}

// ---- Manager ---------------------------------------------------------------

// ListDevices asks the manager for the devices it serves.
type ListDevices struct{}

func (*ListDevices) Type() Type              { return TypeListDevices }
func (*ListDevices) Encode(*Encoder)         {}
func (*ListDevices) Decode(d *Decoder) error { return d.Err() }

// DeviceInfo describes one device.
type DeviceInfo struct {
	Ordinal      uint32
	Name         string
	UUID         [16]byte
	PCIBusID     string
	TotalMemory  uint64
	ComputeMajor uint32
	ComputeMinor uint32
	SMCount      uint32
	Attributes   []int32 // indexed by CUdevice_attribute
}

// minDeviceInfoSize is the encoded size of a zero DeviceInfo.
const minDeviceInfoSize = 4 + 4 + 16 + 4 + 8 + 4 + 4 + 4 + 4

func (m *DeviceInfo) encode(e *Encoder) {
	e.PutUint32(m.Ordinal)
	e.PutString(m.Name)
	e.PutBytes16(m.UUID)
	e.PutString(m.PCIBusID)
	e.PutUint64(m.TotalMemory)
	e.PutUint32(m.ComputeMajor)
	e.PutUint32(m.ComputeMinor)
	e.PutUint32(m.SMCount)
	e.PutCount(len(m.Attributes))
	for _, a := range m.Attributes {
		e.PutInt32(a)
	}
}

func (m *DeviceInfo) decode(d *Decoder) {
	m.Ordinal = d.Uint32()
	m.Name = d.Text()
	m.UUID = d.Bytes16()
	m.PCIBusID = d.Text()
	m.TotalMemory = d.Uint64()
	m.ComputeMajor = d.Uint32()
	m.ComputeMinor = d.Uint32()
	m.SMCount = d.Uint32()
	m.Attributes = nil
	if n := d.Count(4); n > 0 {
		m.Attributes = make([]int32, n)
		for i := range m.Attributes {
			m.Attributes[i] = d.Int32()
		}
	}
}

// Devices answers ListDevices and DriverInfo.
type Devices struct {
	Devices       []DeviceInfo
	Backend       string
	DriverVersion uint32 // CUDA encoding: 13000 = 13.0
}

func (*Devices) Type() Type { return TypeDevices }
func (m *Devices) Encode(e *Encoder) {
	e.PutCount(len(m.Devices))
	for i := range m.Devices {
		m.Devices[i].encode(e)
	}
	e.PutString(m.Backend)
	e.PutUint32(m.DriverVersion)
}
func (m *Devices) Decode(d *Decoder) error {
	m.Devices = nil
	if n := d.Count(minDeviceInfoSize); n > 0 {
		m.Devices = make([]DeviceInfo, n)
		for i := range m.Devices {
			m.Devices[i].decode(d)
		}
	}
	m.Backend = d.Text()
	m.DriverVersion = d.Uint32()
	return d.Err()
}

// OpenSession asks the manager for a session on a device.
type OpenSession struct {
	Device uint32
	Rights Rights // 0 asks for all the tenant has
	Label  string
	PID    int32
}

func (*OpenSession) Type() Type { return TypeOpenSession }
func (m *OpenSession) Encode(e *Encoder) {
	e.PutUint32(m.Device)
	e.PutUint64(uint64(m.Rights))
	e.PutString(m.Label)
	e.PutInt32(m.PID)
}
func (m *OpenSession) Decode(d *Decoder) error {
	m.Device = d.Uint32()
	m.Rights = d.sessionRights()
	m.Label = d.Text()
	m.PID = d.Int32()
	return d.Err()
}

// SessionOpened answers OpenSession. Its frame carries one file descriptor: the
// session connection to the driver.
type SessionOpened struct {
	SessionID   uint64
	Tenant      string
	Rights      Rights
	WindowBase  uint64
	WindowSize  uint64
	MemoryQuota uint64
	// Trust is the tenant's trust tier, so that the shim can refuse code
	// the tier cannot run where it is loaded rather than where it is first
	// used (a guarded tenant's machine-code-only library).
	Trust TrustTier
}

func (*SessionOpened) Type() Type { return TypeSessionOpened }
func (m *SessionOpened) Encode(e *Encoder) {
	e.PutUint64(m.SessionID)
	e.PutString(m.Tenant)
	e.PutUint64(uint64(m.Rights))
	e.PutUint64(m.WindowBase)
	e.PutUint64(m.WindowSize)
	e.PutUint64(m.MemoryQuota)
	e.PutUint8(uint8(m.Trust))
}
func (m *SessionOpened) Decode(d *Decoder) error {
	m.SessionID = d.Uint64()
	m.Tenant = d.Text()
	m.Rights = d.sessionRights()
	m.WindowBase = d.Uint64()
	m.WindowSize = d.Uint64()
	m.MemoryQuota = d.Uint64()
	m.Trust = d.trustTier()
	return d.Err()
}

// ListSessions asks the manager for every session's statistics.
type ListSessions struct{}

func (*ListSessions) Type() Type              { return TypeListSessions }
func (*ListSessions) Encode(*Encoder)         {}
func (*ListSessions) Decode(d *Decoder) error { return d.Err() }

// Sessions answers ListSessions and DriverStats.
type Sessions struct {
	Sessions []SessionStat
}

func (*Sessions) Type() Type { return TypeSessions }
func (m *Sessions) Encode(e *Encoder) {
	e.PutCount(len(m.Sessions))
	for i := range m.Sessions {
		m.Sessions[i].Encode(e)
	}
}
func (m *Sessions) Decode(d *Decoder) error {
	m.Sessions = nil
	if n := d.Count(minSessionStatSize); n > 0 {
		m.Sessions = make([]SessionStat, n)
		for i := range m.Sessions {
			m.Sessions[i].Decode(d)
		}
	}
	return d.Err()
}

// SessionStat is one session's identity and counters. It is an element of
// Sessions and the reply to SessionInfo.
type SessionStat struct {
	ID           uint64
	Tenant       string
	Device       uint32
	PID          int32
	Label        string
	Rights       Rights
	MemoryBytes  uint64
	Buffers      uint32
	Programs     uint32
	Streams      uint32
	Launches     uint64
	Copies       uint64
	CopyBytes    uint64
	InFlight     uint32
	QueueDepth   uint32
	GPUTimeNs    uint64
	QueueDelayNs uint64
	Violations   uint32
	State        string
	// Swapping (issue 8), appended to the encoding.
	Evictions    uint64 // chunks of the session's tenant evicted to host memory, in total
	SwappedBytes uint64 // bytes of the tenant's memory in host memory now
}

// minSessionStatSize is the encoded size of a zero SessionStat.
const minSessionStatSize = 8 + 4 + 4 + 4 + 4 + 8 + 8 + 4*3 + 8*3 + 4*2 + 8*2 + 4 + 4 + 8*2

func (*SessionStat) Type() Type { return TypeSessionStat }
func (m *SessionStat) Encode(e *Encoder) {
	e.PutUint64(m.ID)
	e.PutString(m.Tenant)
	e.PutUint32(m.Device)
	e.PutInt32(m.PID)
	e.PutString(m.Label)
	e.PutUint64(uint64(m.Rights))
	e.PutUint64(m.MemoryBytes)
	e.PutUint32(m.Buffers)
	e.PutUint32(m.Programs)
	e.PutUint32(m.Streams)
	e.PutUint64(m.Launches)
	e.PutUint64(m.Copies)
	e.PutUint64(m.CopyBytes)
	e.PutUint32(m.InFlight)
	e.PutUint32(m.QueueDepth)
	e.PutUint64(m.GPUTimeNs)
	e.PutUint64(m.QueueDelayNs)
	e.PutUint32(m.Violations)
	e.PutString(m.State)
	e.PutUint64(m.Evictions)
	e.PutUint64(m.SwappedBytes)
}
func (m *SessionStat) Decode(d *Decoder) error {
	m.ID = d.Uint64()
	m.Tenant = d.Text()
	m.Device = d.Uint32()
	m.PID = d.Int32()
	m.Label = d.Text()
	m.Rights = d.sessionRights()
	m.MemoryBytes = d.Uint64()
	m.Buffers = d.Uint32()
	m.Programs = d.Uint32()
	m.Streams = d.Uint32()
	m.Launches = d.Uint64()
	m.Copies = d.Uint64()
	m.CopyBytes = d.Uint64()
	m.InFlight = d.Uint32()
	m.QueueDepth = d.Uint32()
	m.GPUTimeNs = d.Uint64()
	m.QueueDelayNs = d.Uint64()
	m.Violations = d.Uint32()
	m.State = d.Text()
	m.Evictions = d.Uint64()
	m.SwappedBytes = d.Uint64()
	return d.Err()
}

// AuditQuery asks for audit log lines.
type AuditQuery struct {
	Since  int64 // unix nanoseconds
	Limit  uint32
	Tenant string // empty: every tenant
}

func (*AuditQuery) Type() Type { return TypeAuditQuery }
func (m *AuditQuery) Encode(e *Encoder) {
	e.PutInt64(m.Since)
	e.PutUint32(m.Limit)
	e.PutString(m.Tenant)
}
func (m *AuditQuery) Decode(d *Decoder) error {
	m.Since = d.Int64()
	m.Limit = d.Uint32()
	m.Tenant = d.Text()
	return d.Err()
}

// AuditLines answers AuditQuery with JSON lines.
type AuditLines struct {
	Lines []string
}

func (*AuditLines) Type() Type          { return TypeAuditLines }
func (m *AuditLines) Encode(e *Encoder) { e.putStrings(m.Lines) }
func (m *AuditLines) Decode(d *Decoder) error {
	m.Lines = d.strings()
	return d.Err()
}

// ---- Driver: memory --------------------------------------------------------

// CreateBuffer allocates device memory in the session's window.
type CreateBuffer struct {
	Size  uint64
	Flags uint32 // reserved for allocation flags; the driver validates them
}

func (*CreateBuffer) Type() Type { return TypeCreateBuffer }
func (m *CreateBuffer) Encode(e *Encoder) {
	e.PutUint64(m.Size)
	e.PutUint32(m.Flags)
}
func (m *CreateBuffer) Decode(d *Decoder) error {
	m.Size = d.Uint64()
	m.Flags = d.Uint32()
	return d.Err()
}

// BufferCreated answers CreateBuffer, GetGlobal and Attach.
type BufferCreated struct {
	Handle uint64
	Addr   uint64 // device address inside the session's window
	Size   uint64
}

func (*BufferCreated) Type() Type { return TypeBufferCreated }
func (m *BufferCreated) Encode(e *Encoder) {
	e.PutUint64(m.Handle)
	e.PutUint64(m.Addr)
	e.PutUint64(m.Size)
}
func (m *BufferCreated) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	m.Addr = d.Uint64()
	m.Size = d.Uint64()
	return d.Err()
}

// Release closes a handle of any kind and revokes its descendants.
type Release struct {
	Handle uint64
}

func (*Release) Type() Type          { return TypeRelease }
func (m *Release) Encode(e *Encoder) { e.PutUint64(m.Handle) }
func (m *Release) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	return d.Err()
}

// BufferWrite writes Data into a buffer at Offset.
type BufferWrite struct {
	Buffer uint64
	Offset uint64
	Data   []byte
}

func (*BufferWrite) Type() Type { return TypeBufferWrite }
func (m *BufferWrite) Encode(e *Encoder) {
	e.PutUint64(m.Buffer)
	e.PutUint64(m.Offset)
	e.PutBytes(m.Data)
}
func (m *BufferWrite) Decode(d *Decoder) error {
	m.Buffer = d.Uint64()
	m.Offset = d.Uint64()
	m.Data = d.Bytes()
	return d.Err()
}

// BufferRead reads Length bytes of a buffer at Offset; the reply is Data.
type BufferRead struct {
	Buffer uint64
	Offset uint64
	Length uint64
}

func (*BufferRead) Type() Type { return TypeBufferRead }
func (m *BufferRead) Encode(e *Encoder) {
	e.PutUint64(m.Buffer)
	e.PutUint64(m.Offset)
	e.PutUint64(m.Length)
}
func (m *BufferRead) Decode(d *Decoder) error {
	m.Buffer = d.Uint64()
	m.Offset = d.Uint64()
	m.Length = d.Uint64()
	return d.Err()
}

// Data carries bytes read from the device (BufferRead, Memcpy DtoH).
type Data struct {
	Data []byte
}

func (*Data) Type() Type          { return TypeData }
func (m *Data) Encode(e *Encoder) { e.PutBytes(m.Data) }
func (m *Data) Decode(d *Decoder) error {
	m.Data = d.Bytes()
	return d.Err()
}

// ---- Driver: programs and kernels -------------------------------------------

// LoadProgram loads a module image (PTX, cubin or fatbin).
type LoadProgram struct {
	Image []byte
	Name  string
}

func (*LoadProgram) Type() Type { return TypeLoadProgram }
func (m *LoadProgram) Encode(e *Encoder) {
	e.PutBytes(m.Image)
	e.PutString(m.Name)
}
func (m *LoadProgram) Decode(d *Decoder) error {
	m.Image = d.Bytes()
	m.Name = d.Text()
	return d.Err()
}

// ProgramLoaded answers LoadProgram with the program's handle and kernel names.
type ProgramLoaded struct {
	Handle  uint64
	Kernels []string
}

func (*ProgramLoaded) Type() Type { return TypeProgramLoaded }
func (m *ProgramLoaded) Encode(e *Encoder) {
	e.PutUint64(m.Handle)
	e.putStrings(m.Kernels)
}
func (m *ProgramLoaded) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	m.Kernels = d.strings()
	return d.Err()
}

// GetKernel looks a kernel up by name in a loaded program.
type GetKernel struct {
	Program uint64
	Name    string
}

func (*GetKernel) Type() Type { return TypeGetKernel }
func (m *GetKernel) Encode(e *Encoder) {
	e.PutUint64(m.Program)
	e.PutString(m.Name)
}
func (m *GetKernel) Decode(d *Decoder) error {
	m.Program = d.Uint64()
	m.Name = d.Text()
	return d.Err()
}

// ParamInfo is where one kernel parameter lies in the packed parameter buffer.
type ParamInfo struct {
	Offset uint32
	Size   uint32
}

// KernelInfo answers GetKernel: the kernel's handle, parameter layout and
// attributes.
type KernelInfo struct {
	Handle              uint64
	Params              []ParamInfo
	MaxThreadsPerBlock  uint32
	SharedSizeBytes     uint32
	ConstSizeBytes      uint32
	LocalSizeBytes      uint32
	NumRegs             uint32
	PTXVersion          uint32
	BinaryVersion       uint32
	MaxDynamicSharedMem uint32
}

func (*KernelInfo) Type() Type { return TypeKernelInfo }
func (m *KernelInfo) Encode(e *Encoder) {
	e.PutUint64(m.Handle)
	e.PutCount(len(m.Params))
	for _, p := range m.Params {
		e.PutUint32(p.Offset)
		e.PutUint32(p.Size)
	}
	e.PutUint32(m.MaxThreadsPerBlock)
	e.PutUint32(m.SharedSizeBytes)
	e.PutUint32(m.ConstSizeBytes)
	e.PutUint32(m.LocalSizeBytes)
	e.PutUint32(m.NumRegs)
	e.PutUint32(m.PTXVersion)
	e.PutUint32(m.BinaryVersion)
	e.PutUint32(m.MaxDynamicSharedMem)
}
func (m *KernelInfo) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	m.Params = nil
	if n := d.Count(8); n > 0 {
		m.Params = make([]ParamInfo, n)
		for i := range m.Params {
			m.Params[i] = ParamInfo{Offset: d.Uint32(), Size: d.Uint32()}
		}
	}
	m.MaxThreadsPerBlock = d.Uint32()
	m.SharedSizeBytes = d.Uint32()
	m.ConstSizeBytes = d.Uint32()
	m.LocalSizeBytes = d.Uint32()
	m.NumRegs = d.Uint32()
	m.PTXVersion = d.Uint32()
	m.BinaryVersion = d.Uint32()
	m.MaxDynamicSharedMem = d.Uint32()
	return d.Err()
}

// GetGlobal looks a module-global variable up by name; the reply is a
// BufferCreated describing it.
type GetGlobal struct {
	Program uint64
	Name    string
}

func (*GetGlobal) Type() Type { return TypeGetGlobal }
func (m *GetGlobal) Encode(e *Encoder) {
	e.PutUint64(m.Program)
	e.PutString(m.Name)
}
func (m *GetGlobal) Decode(d *Decoder) error {
	m.Program = d.Uint64()
	m.Name = d.Text()
	return d.Err()
}

// ---- Driver: streams, launches, copies --------------------------------------

// CreateStream creates a stream.
type CreateStream struct {
	Priority int32
	Flags    uint32 // CUDA stream flags; the driver validates them
}

func (*CreateStream) Type() Type { return TypeCreateStream }
func (m *CreateStream) Encode(e *Encoder) {
	e.PutInt32(m.Priority)
	e.PutUint32(m.Flags)
}
func (m *CreateStream) Decode(d *Decoder) error {
	m.Priority = d.Int32()
	m.Flags = d.Uint32()
	return d.Err()
}

// StreamCreated answers CreateStream.
type StreamCreated struct {
	Handle uint64
}

func (*StreamCreated) Type() Type          { return TypeStreamCreated }
func (m *StreamCreated) Encode(e *Encoder) { e.PutUint64(m.Handle) }
func (m *StreamCreated) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	return d.Err()
}

// Launch launches a kernel. Params is the packed parameter buffer laid out as
// KernelInfo.Params says. It may be sent with NoReply.
type Launch struct {
	Kernel    uint64
	Stream    uint64 // 0: the session's default stream
	Grid      [3]uint32
	Block     [3]uint32
	SharedMem uint32 // dynamic shared memory bytes
	Params    []byte
}

func (*Launch) Type() Type { return TypeLaunch }
func (m *Launch) Encode(e *Encoder) {
	e.PutUint64(m.Kernel)
	e.PutUint64(m.Stream)
	e.PutUint32x3(m.Grid)
	e.PutUint32x3(m.Block)
	e.PutUint32(m.SharedMem)
	e.PutBytes(m.Params)
}
func (m *Launch) Decode(d *Decoder) error {
	m.Kernel = d.Uint64()
	m.Stream = d.Uint64()
	m.Grid = d.Uint32x3()
	m.Block = d.Uint32x3()
	m.SharedMem = d.Uint32()
	m.Params = d.Bytes()
	return d.Err()
}

// Ref names device memory: a buffer and an offset in it, or, with Buffer 0, an
// absolute device address (Offset) inside the session's window.
type Ref struct {
	Buffer uint64
	Offset uint64
}

func (e *Encoder) putRef(r Ref) {
	e.PutUint64(r.Buffer)
	e.PutUint64(r.Offset)
}

func (d *Decoder) ref() Ref { return Ref{Buffer: d.Uint64(), Offset: d.Uint64()} }

// Memcpy copies Size bytes. For HtoD, Data carries the bytes (len(Data) ==
// Size) and Src is unused; for DtoH the reply is Data and Dst is unused; for
// other directions Data must be empty. HtoD and DtoD may be sent with NoReply.
type Memcpy struct {
	Stream uint64
	Dir    Dir
	Dst    Ref
	Src    Ref
	Size   uint64
	Data   []byte
}

func (*Memcpy) Type() Type { return TypeMemcpy }
func (m *Memcpy) Encode(e *Encoder) {
	e.PutUint64(m.Stream)
	e.PutUint8(uint8(m.Dir))
	e.putRef(m.Dst)
	e.putRef(m.Src)
	e.PutUint64(m.Size)
	e.PutBytes(m.Data)
}
func (m *Memcpy) Decode(d *Decoder) error {
	m.Stream = d.Uint64()
	m.Dir = Dir(d.Uint8())
	m.Dst = d.ref()
	m.Src = d.ref()
	m.Size = d.Uint64()
	m.Data = d.Bytes()
	if d.Err() != nil {
		return d.Err()
	}
	switch {
	case !m.Dir.Valid():
		d.Failf("memcpy direction %d", m.Dir)
	case m.Dir == DirHtoD && uint64(len(m.Data)) != m.Size:
		d.Failf("memcpy HtoD of %d bytes carries %d", m.Size, len(m.Data))
	case m.Dir != DirHtoD && len(m.Data) != 0:
		d.Failf("memcpy %v carries %d bytes of data", m.Dir, len(m.Data))
	}
	return d.Err()
}

// replyType: a DtoH copy answers with the bytes.
func (m *Memcpy) replyType() Type {
	if m.Dir == DirDtoH {
		return TypeData
	}
	return TypeEmpty
}

// Memset fills Count elements of ElemSize bytes (1, 2 or 4) with Value. It may
// be sent with NoReply.
type Memset struct {
	Stream   uint64
	Dst      Ref
	Value    uint32
	ElemSize uint8
	Count    uint64
}

func (*Memset) Type() Type { return TypeMemset }
func (m *Memset) Encode(e *Encoder) {
	e.PutUint64(m.Stream)
	e.putRef(m.Dst)
	e.PutUint32(m.Value)
	e.PutUint8(m.ElemSize)
	e.PutUint64(m.Count)
}
func (m *Memset) Decode(d *Decoder) error {
	m.Stream = d.Uint64()
	m.Dst = d.ref()
	m.Value = d.Uint32()
	m.ElemSize = d.Uint8()
	m.Count = d.Uint64()
	if d.Err() == nil && m.ElemSize != 1 && m.ElemSize != 2 && m.ElemSize != 4 {
		d.Failf("memset element size %d, want 1, 2 or 4", m.ElemSize)
	}
	return d.Err()
}

// ---- Driver: fences and synchronization ------------------------------------

// RecordFence records a fence after the work queued so far on Stream.
type RecordFence struct {
	Stream uint64
}

func (*RecordFence) Type() Type          { return TypeRecordFence }
func (m *RecordFence) Encode(e *Encoder) { e.PutUint64(m.Stream) }
func (m *RecordFence) Decode(d *Decoder) error {
	m.Stream = d.Uint64()
	return d.Err()
}

// FenceCreated answers RecordFence.
type FenceCreated struct {
	Handle uint64
}

func (*FenceCreated) Type() Type          { return TypeFenceCreated }
func (m *FenceCreated) Encode(e *Encoder) { e.PutUint64(m.Handle) }
func (m *FenceCreated) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	return d.Err()
}

// StreamWaitFence makes later work on Stream wait for Fence. It may be sent
// with NoReply.
type StreamWaitFence struct {
	Stream uint64
	Fence  uint64
}

func (*StreamWaitFence) Type() Type { return TypeStreamWaitFence }
func (m *StreamWaitFence) Encode(e *Encoder) {
	e.PutUint64(m.Stream)
	e.PutUint64(m.Fence)
}
func (m *StreamWaitFence) Decode(d *Decoder) error {
	m.Stream = d.Uint64()
	m.Fence = d.Uint64()
	return d.Err()
}

// PollFence asks whether a fence has passed: Empty if so, Error NotReady if not,
// or the error of the work before it.
type PollFence struct {
	Fence uint64
}

func (*PollFence) Type() Type          { return TypePollFence }
func (m *PollFence) Encode(e *Encoder) { e.PutUint64(m.Fence) }
func (m *PollFence) Decode(d *Decoder) error {
	m.Fence = d.Uint64()
	return d.Err()
}

// WaitFence waits for a fence: Empty, Error Timeout, or the work's error.
type WaitFence struct {
	Fence     uint64
	TimeoutNs uint64 // 0: wait forever
}

func (*WaitFence) Type() Type { return TypeWaitFence }
func (m *WaitFence) Encode(e *Encoder) {
	e.PutUint64(m.Fence)
	e.PutUint64(m.TimeoutNs)
}
func (m *WaitFence) Decode(d *Decoder) error {
	m.Fence = d.Uint64()
	m.TimeoutNs = d.Uint64()
	return d.Err()
}

// Synchronize waits for a stream (0: all of the session's work) and returns the
// first deferred error of asynchronous requests.
type Synchronize struct {
	Stream uint64
}

func (*Synchronize) Type() Type          { return TypeSynchronize }
func (m *Synchronize) Encode(e *Encoder) { e.PutUint64(m.Stream) }
func (m *Synchronize) Decode(d *Decoder) error {
	m.Stream = d.Uint64()
	return d.Err()
}

// FenceElapsed asks for the device time between two passed fences.
type FenceElapsed struct {
	Start uint64
	End   uint64
}

func (*FenceElapsed) Type() Type { return TypeFenceElapsed }
func (m *FenceElapsed) Encode(e *Encoder) {
	e.PutUint64(m.Start)
	e.PutUint64(m.End)
}
func (m *FenceElapsed) Decode(d *Decoder) error {
	m.Start = d.Uint64()
	m.End = d.Uint64()
	return d.Err()
}

// Duration answers FenceElapsed.
type Duration struct {
	Ns uint64
}

func (*Duration) Type() Type          { return TypeDuration }
func (m *Duration) Encode(e *Encoder) { e.PutUint64(m.Ns) }
func (m *Duration) Decode(d *Decoder) error {
	m.Ns = d.Uint64()
	return d.Err()
}

// ---- Driver: capabilities ---------------------------------------------------

// Restrict narrows the session's rights to old AND Rights; it never widens.
type Restrict struct {
	Rights Rights
}

func (*Restrict) Type() Type          { return TypeRestrict }
func (m *Restrict) Encode(e *Encoder) { e.PutUint64(uint64(m.Rights)) }
func (m *Restrict) Decode(d *Decoder) error {
	m.Rights = d.sessionRights()
	return d.Err()
}

// RightsReply answers Restrict with the session's rights now.
type RightsReply struct {
	Rights Rights
}

func (*RightsReply) Type() Type          { return TypeRightsReply }
func (m *RightsReply) Encode(e *Encoder) { e.PutUint64(uint64(m.Rights)) }
func (m *RightsReply) Decode(d *Decoder) error {
	m.Rights = d.sessionRights()
	return d.Err()
}

// Grant makes a buffer available to another session with the given buffer
// rights.
type Grant struct {
	Buffer uint64
	Rights Rights // buffer rights (RightBuffer…)
}

func (*Grant) Type() Type { return TypeGrant }
func (m *Grant) Encode(e *Encoder) {
	e.PutUint64(m.Buffer)
	e.PutUint64(uint64(m.Rights))
}
func (m *Grant) Decode(d *Decoder) error {
	m.Buffer = d.Uint64()
	m.Rights = d.bufferRights()
	return d.Err()
}

// Granted answers Grant: the grant's handle (Release or Revoke it to revoke
// the grant) and the token the receiver attaches with.
type Granted struct {
	Handle uint64
	Token  [16]byte
}

func (*Granted) Type() Type { return TypeGranted }
func (m *Granted) Encode(e *Encoder) {
	e.PutUint64(m.Handle)
	e.PutBytes16(m.Token)
}
func (m *Granted) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	m.Token = d.Bytes16()
	return d.Err()
}

// Attach maps a granted buffer into this session's window; the reply is a
// BufferCreated.
type Attach struct {
	Token [16]byte
}

func (*Attach) Type() Type          { return TypeAttach }
func (m *Attach) Encode(e *Encoder) { e.PutBytes16(m.Token) }
func (m *Attach) Decode(d *Decoder) error {
	m.Token = d.Bytes16()
	return d.Err()
}

// Revoke revokes an object and all its descendants; the handle stays and
// answers Revoked until it is Released.
type Revoke struct {
	Handle uint64
}

func (*Revoke) Type() Type          { return TypeRevoke }
func (m *Revoke) Encode(e *Encoder) { e.PutUint64(m.Handle) }
func (m *Revoke) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	return d.Err()
}

// MemInfo asks for the tenant's view of device memory.
type MemInfo struct{}

func (*MemInfo) Type() Type              { return TypeMemInfo }
func (*MemInfo) Encode(*Encoder)         {}
func (*MemInfo) Decode(d *Decoder) error { return d.Err() }

// MemInfoReply answers MemInfo: the tenant's quota and what is left of it.
type MemInfoReply struct {
	Free  uint64
	Total uint64
}

func (*MemInfoReply) Type() Type { return TypeMemInfoReply }
func (m *MemInfoReply) Encode(e *Encoder) {
	e.PutUint64(m.Free)
	e.PutUint64(m.Total)
}
func (m *MemInfoReply) Decode(d *Decoder) error {
	m.Free = d.Uint64()
	m.Total = d.Uint64()
	return d.Err()
}

// SessionInfo asks for this session's SessionStat.
type SessionInfo struct{}

func (*SessionInfo) Type() Type              { return TypeSessionInfo }
func (*SessionInfo) Encode(*Encoder)         {}
func (*SessionInfo) Decode(d *Decoder) error { return d.Err() }

// ---- Control (manager -> driver) --------------------------------------------

// AttachSession hands a driver a new session. Its frame carries one file
// descriptor: the driver's end of the session connection.
type AttachSession struct {
	SessionID   uint64
	Tenant      string
	Rights      Rights
	MemoryQuota uint64
	Weight      uint32
	Priority    int32
	PID         int32
	UID         uint32
	Label       string
	// Trust is the tenant's trust tier; TrustedModules the operator's
	// allowlist of machine-code modules (SHA-256 of the image), which only a
	// trusted tenant may load (issue 5).
	Trust          TrustTier
	TrustedModules [][32]byte
}

func (*AttachSession) Type() Type { return TypeAttachSession }
func (m *AttachSession) Encode(e *Encoder) {
	e.PutUint64(m.SessionID)
	e.PutString(m.Tenant)
	e.PutUint64(uint64(m.Rights))
	e.PutUint64(m.MemoryQuota)
	e.PutUint32(m.Weight)
	e.PutInt32(m.Priority)
	e.PutInt32(m.PID)
	e.PutUint32(m.UID)
	e.PutString(m.Label)
	e.PutUint8(uint8(m.Trust))
	e.putHashes(m.TrustedModules)
}
func (m *AttachSession) Decode(d *Decoder) error {
	m.SessionID = d.Uint64()
	m.Tenant = d.Text()
	m.Rights = d.sessionRights()
	m.MemoryQuota = d.Uint64()
	m.Weight = d.Uint32()
	m.Priority = d.Int32()
	m.PID = d.Int32()
	m.UID = d.Uint32()
	m.Label = d.Text()
	m.Trust = d.trustTier()
	m.TrustedModules = d.hashes()
	return d.Err()
}

// SessionAttached answers AttachSession with the session's window.
type SessionAttached struct {
	WindowBase uint64
	WindowSize uint64
}

func (*SessionAttached) Type() Type { return TypeSessionAttached }
func (m *SessionAttached) Encode(e *Encoder) {
	e.PutUint64(m.WindowBase)
	e.PutUint64(m.WindowSize)
}
func (m *SessionAttached) Decode(d *Decoder) error {
	m.WindowBase = d.Uint64()
	m.WindowSize = d.Uint64()
	return d.Err()
}

// DriverStats asks a driver for its sessions' statistics; the reply is Sessions.
type DriverStats struct{}

func (*DriverStats) Type() Type              { return TypeDriverStats }
func (*DriverStats) Encode(*Encoder)         {}
func (*DriverStats) Decode(d *Decoder) error { return d.Err() }

// KillSession ends a session on a driver: its objects are revoked and its
// connection closed.
type KillSession struct {
	SessionID uint64
	Reason    string
}

func (*KillSession) Type() Type { return TypeKillSession }
func (m *KillSession) Encode(e *Encoder) {
	e.PutUint64(m.SessionID)
	e.PutString(m.Reason)
}
func (m *KillSession) Decode(d *Decoder) error {
	m.SessionID = d.Uint64()
	m.Reason = d.Text()
	return d.Err()
}

// DriverInfo asks a driver for its device; the reply is Devices.
type DriverInfo struct{}

func (*DriverInfo) Type() Type              { return TypeDriverInfo }
func (*DriverInfo) Encode(*Encoder)         {}
func (*DriverInfo) Decode(d *Decoder) error { return d.Err() }

// ShmFlags modify ShmGet.
type ShmFlags uint32

// ShmGet flags.
const (
	// ShmCreate creates the segment if the owner has none of that name (only
	// in the session's own tenant).
	ShmCreate ShmFlags = 1 << iota
	// ShmExclusive, with ShmCreate, fails if the segment exists.
	ShmExclusive

	knownShmFlags = ShmCreate | ShmExclusive
)

// MaxShmName bounds a segment's name, in bytes.
const MaxShmName = 255

// ShmGet finds, or creates, a named shared device memory segment: Owner's
// (empty: the session's own tenant) segment called Name. Size is the size
// to create; when finding, 0 or at most the segment's size. The reply is a
// ShmSegment whose handle ShmAttach and ShmCtl take.
type ShmGet struct {
	Owner string
	Name  string
	Size  uint64
	Flags ShmFlags
}

func (*ShmGet) Type() Type { return TypeShmGet }
func (m *ShmGet) Encode(e *Encoder) {
	e.PutString(m.Owner)
	e.PutString(m.Name)
	e.PutUint64(m.Size)
	e.PutUint32(uint32(m.Flags))
}
func (m *ShmGet) Decode(d *Decoder) error {
	m.Owner = d.Text()
	m.Name = d.Text()
	m.Size = d.Uint64()
	m.Flags = ShmFlags(d.Uint32())
	if m.Flags&^knownShmFlags != 0 {
		d.Failf("shm flags %#x: unknown bits", uint32(m.Flags))
	}
	return d.Err()
}

// ShmSegment answers ShmGet: the segment's handle in this session, what it
// is, the buffer rights the session has on it, and whether this call created
// it.
type ShmSegment struct {
	Handle  uint64
	Owner   string
	Name    string
	Size    uint64
	Rights  Rights // buffer rights
	Created bool
}

func (*ShmSegment) Type() Type { return TypeShmSegment }
func (m *ShmSegment) Encode(e *Encoder) {
	e.PutUint64(m.Handle)
	e.PutString(m.Owner)
	e.PutString(m.Name)
	e.PutUint64(m.Size)
	e.PutUint64(uint64(m.Rights))
	e.PutBool(m.Created)
}
func (m *ShmSegment) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	m.Owner = d.Text()
	m.Name = d.Text()
	m.Size = d.Uint64()
	m.Rights = d.bufferRights()
	m.Created = d.Bool()
	return d.Err()
}

// ShmAttach maps a segment into the session's window; the reply is a
// BufferCreated whose handle (Release it to detach) is a mapping.
type ShmAttach struct {
	Segment  uint64
	ReadOnly bool
}

func (*ShmAttach) Type() Type { return TypeShmAttach }
func (m *ShmAttach) Encode(e *Encoder) {
	e.PutUint64(m.Segment)
	e.PutBool(m.ReadOnly)
}
func (m *ShmAttach) Decode(d *Decoder) error {
	m.Segment = d.Uint64()
	m.ReadOnly = d.Bool()
	return d.Err()
}

// ShmOp is what ShmCtl does.
type ShmOp uint8

// ShmCtl operations.
const (
	// ShmStatOp reports the segment.
	ShmStatOp ShmOp = iota + 1
	// ShmRemove removes the segment's name; the memory goes once nobody
	// holds a handle to it any more (the owner tenant only).
	ShmRemove
	// ShmAllow gives Tenant the buffer rights Rights on the segment (the
	// owner tenant only). Narrowing narrows the handles Tenant's sessions
	// hold; no rights revokes them, and their mappings.
	ShmAllow

	shmOpMax
)

// ShmCtl operates on a segment; the reply is its ShmStat (after the
// operation).
type ShmCtl struct {
	Segment uint64
	Op      ShmOp
	Tenant  string // ShmAllow
	Rights  Rights // ShmAllow: buffer rights
}

func (*ShmCtl) Type() Type { return TypeShmCtl }
func (m *ShmCtl) Encode(e *Encoder) {
	e.PutUint64(m.Segment)
	e.PutUint8(uint8(m.Op))
	e.PutString(m.Tenant)
	e.PutUint64(uint64(m.Rights))
}
func (m *ShmCtl) Decode(d *Decoder) error {
	m.Segment = d.Uint64()
	m.Op = ShmOp(d.Uint8())
	m.Tenant = d.Text()
	m.Rights = d.bufferRights()
	if d.Err() == nil && (m.Op == 0 || m.Op >= shmOpMax) {
		d.Failf("shm op %d", m.Op)
	}
	return d.Err()
}

// ShmAccess is a tenant's rights on a segment.
type ShmAccess struct {
	Tenant string
	Rights Rights // buffer rights
}

// minShmAccessSize is the encoded size of a zero ShmAccess.
const minShmAccessSize = 4 + 8

// ShmStat describes a segment.
type ShmStat struct {
	Owner    string
	Name     string
	Size     uint64
	Handles  uint32 // segment handles held, in every session
	Mappings uint32 // attachments alive, in every session
	Removed  bool
	Allowed  []ShmAccess // tenants other than the owner that may attach it
}

func (*ShmStat) Type() Type { return TypeShmStat }
func (m *ShmStat) Encode(e *Encoder) {
	e.PutString(m.Owner)
	e.PutString(m.Name)
	e.PutUint64(m.Size)
	e.PutUint32(m.Handles)
	e.PutUint32(m.Mappings)
	e.PutBool(m.Removed)
	e.PutCount(len(m.Allowed))
	for _, a := range m.Allowed {
		e.PutString(a.Tenant)
		e.PutUint64(uint64(a.Rights))
	}
}
func (m *ShmStat) Decode(d *Decoder) error {
	m.Owner = d.Text()
	m.Name = d.Text()
	m.Size = d.Uint64()
	m.Handles = d.Uint32()
	m.Mappings = d.Uint32()
	m.Removed = d.Bool()
	m.Allowed = nil
	if n := d.Count(minShmAccessSize); n > 0 {
		m.Allowed = make([]ShmAccess, n)
		for i := range m.Allowed {
			m.Allowed[i].Tenant = d.Text()
			m.Allowed[i].Rights = d.bufferRights()
		}
	}
	return d.Err()
}
