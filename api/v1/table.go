package v1

import "strconv"

// Type is a message type, the header's type field.
type Type uint16

// Request types, numbered as in the protocol specification.
const (
	// Manager (and Hello everywhere).
	TypeHello        Type = 1
	TypeListDevices  Type = 2
	TypeOpenSession  Type = 3
	TypeListSessions Type = 4
	TypeAuditQuery   Type = 5
	TypePolicyList   Type = 6 // also on the control endpoint, as are the next three
	TypePolicyUse    Type = 7
	TypeSetShare     Type = 8
	TypeTenantStats  Type = 9
	TypePolicyLoad   Type = 10 // also on the control endpoint, as are the next two
	TypePolicyUnload Type = 11
	TypePolicyMaps   Type = 12

	// Driver, on a session connection.
	TypeCreateBuffer      Type = 20
	TypeRelease           Type = 21
	TypeBufferWrite       Type = 22
	TypeBufferRead        Type = 23
	TypeLoadProgram       Type = 24
	TypeGetKernel         Type = 25
	TypeGetGlobal         Type = 26
	TypeCreateStream      Type = 27
	TypeLaunch            Type = 28
	TypeMemcpy            Type = 29
	TypeMemset            Type = 30
	TypeRecordFence       Type = 31
	TypeStreamWaitFence   Type = 32
	TypePollFence         Type = 33
	TypeWaitFence         Type = 34
	TypeSynchronize       Type = 35
	TypeRestrict          Type = 36
	TypeGrant             Type = 37
	TypeAttach            Type = 38
	TypeRevoke            Type = 39
	TypeMemInfo           Type = 40
	TypeFenceElapsed      Type = 41
	TypeSessionInfo       Type = 42
	TypeShmGet            Type = 43
	TypeShmAttach         Type = 44
	TypeShmCtl            Type = 45
	TypeOpenRing          Type = 46
	TypeOpenStaging       Type = 47
	TypeStagedCopy        Type = 48
	TypeMapHost           Type = 49
	TypeUnmapHost         Type = 50
	TypeHostCopy          Type = 51
	TypeOpenCompletion    Type = 52
	TypeSynchronizeFences Type = 53
	TypeWatchLaunches     Type = 54

	// Control, manager to driver.
	TypeAttachSession Type = 60
	TypeDriverStats   Type = 61
	TypeKillSession   Type = 62
	TypeDriverInfo    Type = 63
)

// Reply types. They travel only in frames with the Reply flag; numbers from 128
// up are replies.
const (
	TypeEmpty            Type = 128
	TypeError            Type = 129
	TypeHelloReply       Type = 130
	TypeDevices          Type = 131
	TypeSessionOpened    Type = 132
	TypeSessions         Type = 133
	TypeAuditLines       Type = 134
	TypeBufferCreated    Type = 135
	TypeData             Type = 136
	TypeProgramLoaded    Type = 137
	TypeKernelInfo       Type = 138
	TypeStreamCreated    Type = 139
	TypeFenceCreated     Type = 140
	TypeRightsReply      Type = 141
	TypeGranted          Type = 142
	TypeMemInfoReply     Type = 143
	TypeDuration         Type = 144
	TypeSessionStat      Type = 145
	TypeSessionAttached  Type = 146
	TypeShmSegment       Type = 147
	TypeShmStat          Type = 148
	TypeRingOpened       Type = 149
	TypeStagingOpened    Type = 150
	TypePolicies         Type = 151
	TypeTenants          Type = 152
	TypePolicyLoaded     Type = 153
	TypePolicyMapValues  Type = 154
	TypeHostMapped       Type = 155
	TypeCompletionOpened Type = 156
	TypeFenceTargets     Type = 157
)

// Info is one row of the message table.
type Info struct {
	Type Type
	Name string
	// New returns a zero message of this type to decode into.
	New func() Message
	// Reply is the type of a successful reply (any request may instead get an
	// Error). Zero for reply types. A Memcpy DtoH is answered with Data rather
	// than Empty: ReplyType gives the reply of a particular request.
	Reply Type
	// Endpoints is where a request of this type is accepted; zero for reply types.
	Endpoints Endpoint
	// Right is the session right the request needs; zero for none.
	Right Rights
	// Async reports whether the request may be sent with NoReply. (A Memcpy
	// may only when its reply would be Empty: not DtoH.)
	Async bool
	// FDs is exactly how many file descriptors a frame of this type carries.
	FDs int
}

// IsRequest reports whether the type is a request (else it is a reply).
func (i Info) IsRequest() bool { return i.Endpoints != 0 }

// messageTable is the protocol: every message type, what answers it, where it
// may be sent and what it needs. Servers enforce it through Admit, clients and
// fuzzers through DecodeFrame and Encoder.PutFrame; nothing else decides.
var messageTable = [...]Info{
	{Type: TypeHello, Name: "Hello", New: func() Message { return new(Hello) }, Reply: TypeHelloReply, Endpoints: AllEndpoints},
	{Type: TypeListDevices, Name: "ListDevices", New: func() Message { return new(ListDevices) }, Reply: TypeDevices, Endpoints: EndpointManager},
	{Type: TypeOpenSession, Name: "OpenSession", New: func() Message { return new(OpenSession) }, Reply: TypeSessionOpened, Endpoints: EndpointManager},
	{Type: TypeListSessions, Name: "ListSessions", New: func() Message { return new(ListSessions) }, Reply: TypeSessions, Endpoints: EndpointManager},
	{Type: TypeAuditQuery, Name: "AuditQuery", New: func() Message { return new(AuditQuery) }, Reply: TypeAuditLines, Endpoints: EndpointManager},
	{Type: TypePolicyList, Name: "PolicyList", New: func() Message { return new(PolicyList) }, Reply: TypePolicies, Endpoints: EndpointManager | EndpointControl},
	{Type: TypePolicyUse, Name: "PolicyUse", New: func() Message { return new(PolicyUse) }, Reply: TypeEmpty, Endpoints: EndpointManager | EndpointControl},
	{Type: TypeSetShare, Name: "SetShare", New: func() Message { return new(SetShare) }, Reply: TypeEmpty, Endpoints: EndpointManager | EndpointControl},
	{Type: TypeTenantStats, Name: "TenantStats", New: func() Message { return new(TenantStats) }, Reply: TypeTenants, Endpoints: EndpointManager | EndpointControl},
	{Type: TypePolicyLoad, Name: "PolicyLoad", New: func() Message { return new(PolicyLoad) }, Reply: TypePolicyLoaded, Endpoints: EndpointManager | EndpointControl},
	{Type: TypePolicyUnload, Name: "PolicyUnload", New: func() Message { return new(PolicyUnload) }, Reply: TypeEmpty, Endpoints: EndpointManager | EndpointControl},
	{Type: TypePolicyMaps, Name: "PolicyMaps", New: func() Message { return new(PolicyMaps) }, Reply: TypePolicyMapValues, Endpoints: EndpointManager | EndpointControl},

	{Type: TypeCreateBuffer, Name: "CreateBuffer", New: func() Message { return new(CreateBuffer) }, Reply: TypeBufferCreated, Endpoints: EndpointDriver, Right: RightAlloc},
	{Type: TypeRelease, Name: "Release", New: func() Message { return new(Release) }, Reply: TypeEmpty, Endpoints: EndpointDriver},
	{Type: TypeBufferWrite, Name: "BufferWrite", New: func() Message { return new(BufferWrite) }, Reply: TypeEmpty, Endpoints: EndpointDriver, Right: RightCopy},
	{Type: TypeBufferRead, Name: "BufferRead", New: func() Message { return new(BufferRead) }, Reply: TypeData, Endpoints: EndpointDriver, Right: RightCopy},
	{Type: TypeLoadProgram, Name: "LoadProgram", New: func() Message { return new(LoadProgram) }, Reply: TypeProgramLoaded, Endpoints: EndpointDriver, Right: RightLoad},
	{Type: TypeGetKernel, Name: "GetKernel", New: func() Message { return new(GetKernel) }, Reply: TypeKernelInfo, Endpoints: EndpointDriver, Right: RightLoad},
	{Type: TypeGetGlobal, Name: "GetGlobal", New: func() Message { return new(GetGlobal) }, Reply: TypeBufferCreated, Endpoints: EndpointDriver, Right: RightLoad},
	{Type: TypeCreateStream, Name: "CreateStream", New: func() Message { return new(CreateStream) }, Reply: TypeStreamCreated, Endpoints: EndpointDriver, Right: RightStream},
	{Type: TypeLaunch, Name: "Launch", New: func() Message { return new(Launch) }, Reply: TypeEmpty, Endpoints: EndpointDriver, Right: RightLaunch, Async: true},
	{Type: TypeMemcpy, Name: "Memcpy", New: func() Message { return new(Memcpy) }, Reply: TypeEmpty, Endpoints: EndpointDriver, Right: RightCopy, Async: true},
	{Type: TypeMemset, Name: "Memset", New: func() Message { return new(Memset) }, Reply: TypeEmpty, Endpoints: EndpointDriver, Right: RightCopy, Async: true},
	{Type: TypeRecordFence, Name: "RecordFence", New: func() Message { return new(RecordFence) }, Reply: TypeFenceCreated, Endpoints: EndpointDriver, Right: RightStream},
	{Type: TypeStreamWaitFence, Name: "StreamWaitFence", New: func() Message { return new(StreamWaitFence) }, Reply: TypeEmpty, Endpoints: EndpointDriver, Right: RightStream, Async: true},
	{Type: TypePollFence, Name: "PollFence", New: func() Message { return new(PollFence) }, Reply: TypeEmpty, Endpoints: EndpointDriver},
	{Type: TypeWaitFence, Name: "WaitFence", New: func() Message { return new(WaitFence) }, Reply: TypeEmpty, Endpoints: EndpointDriver},
	{Type: TypeSynchronize, Name: "Synchronize", New: func() Message { return new(Synchronize) }, Reply: TypeEmpty, Endpoints: EndpointDriver},
	{Type: TypeRestrict, Name: "Restrict", New: func() Message { return new(Restrict) }, Reply: TypeRightsReply, Endpoints: EndpointDriver},
	{Type: TypeGrant, Name: "Grant", New: func() Message { return new(Grant) }, Reply: TypeGranted, Endpoints: EndpointDriver, Right: RightGrant},
	{Type: TypeAttach, Name: "Attach", New: func() Message { return new(Attach) }, Reply: TypeBufferCreated, Endpoints: EndpointDriver, Right: RightGrant},
	{Type: TypeRevoke, Name: "Revoke", New: func() Message { return new(Revoke) }, Reply: TypeEmpty, Endpoints: EndpointDriver},
	{Type: TypeMemInfo, Name: "MemInfo", New: func() Message { return new(MemInfo) }, Reply: TypeMemInfoReply, Endpoints: EndpointDriver},
	{Type: TypeFenceElapsed, Name: "FenceElapsed", New: func() Message { return new(FenceElapsed) }, Reply: TypeDuration, Endpoints: EndpointDriver},
	{Type: TypeSessionInfo, Name: "SessionInfo", New: func() Message { return new(SessionInfo) }, Reply: TypeSessionStat, Endpoints: EndpointDriver},
	{Type: TypeShmGet, Name: "ShmGet", New: func() Message { return new(ShmGet) }, Reply: TypeShmSegment, Endpoints: EndpointDriver, Right: RightGrant},
	{Type: TypeShmAttach, Name: "ShmAttach", New: func() Message { return new(ShmAttach) }, Reply: TypeBufferCreated, Endpoints: EndpointDriver, Right: RightGrant},
	{Type: TypeShmCtl, Name: "ShmCtl", New: func() Message { return new(ShmCtl) }, Reply: TypeShmStat, Endpoints: EndpointDriver, Right: RightGrant},
	{Type: TypeOpenRing, Name: "OpenRing", New: func() Message { return new(OpenRing) }, Reply: TypeRingOpened, Endpoints: EndpointDriver},
	{Type: TypeOpenStaging, Name: "OpenStaging", New: func() Message { return new(OpenStaging) }, Reply: TypeStagingOpened, Endpoints: EndpointDriver, Right: RightCopy},
	{Type: TypeStagedCopy, Name: "StagedCopy", New: func() Message { return new(StagedCopy) }, Reply: TypeEmpty, Endpoints: EndpointDriver, Right: RightCopy},
	{Type: TypeMapHost, Name: "MapHost", New: func() Message { return new(MapHost) }, Reply: TypeHostMapped, Endpoints: EndpointDriver, Right: RightCopy},
	{Type: TypeUnmapHost, Name: "UnmapHost", New: func() Message { return new(UnmapHost) }, Reply: TypeEmpty, Endpoints: EndpointDriver},
	{Type: TypeHostCopy, Name: "HostCopy", New: func() Message { return new(HostCopy) }, Reply: TypeEmpty, Endpoints: EndpointDriver, Right: RightCopy, Async: true},
	{Type: TypeOpenCompletion, Name: "OpenCompletion", New: func() Message { return new(OpenCompletion) }, Reply: TypeCompletionOpened, Endpoints: EndpointDriver},
	{Type: TypeSynchronizeFences, Name: "SynchronizeFences", New: func() Message { return new(SynchronizeFences) }, Reply: TypeFenceTargets, Endpoints: EndpointDriver},
	{Type: TypeWatchLaunches, Name: "WatchLaunches", New: func() Message { return new(WatchLaunches) }, Reply: TypeEmpty, Endpoints: EndpointDriver},

	{Type: TypeAttachSession, Name: "AttachSession", New: func() Message { return new(AttachSession) }, Reply: TypeSessionAttached, Endpoints: EndpointControl, FDs: 1},
	{Type: TypeDriverStats, Name: "DriverStats", New: func() Message { return new(DriverStats) }, Reply: TypeSessions, Endpoints: EndpointControl},
	{Type: TypeKillSession, Name: "KillSession", New: func() Message { return new(KillSession) }, Reply: TypeEmpty, Endpoints: EndpointControl},
	{Type: TypeDriverInfo, Name: "DriverInfo", New: func() Message { return new(DriverInfo) }, Reply: TypeDevices, Endpoints: EndpointControl},

	{Type: TypeEmpty, Name: "Empty", New: func() Message { return new(Empty) }},
	{Type: TypeError, Name: "Error", New: func() Message { return new(Error) }},
	{Type: TypeHelloReply, Name: "HelloReply", New: func() Message { return new(HelloReply) }},
	{Type: TypeDevices, Name: "Devices", New: func() Message { return new(Devices) }},
	{Type: TypeSessionOpened, Name: "SessionOpened", New: func() Message { return new(SessionOpened) }, FDs: 1},
	{Type: TypeSessions, Name: "Sessions", New: func() Message { return new(Sessions) }},
	{Type: TypeAuditLines, Name: "AuditLines", New: func() Message { return new(AuditLines) }},
	{Type: TypeBufferCreated, Name: "BufferCreated", New: func() Message { return new(BufferCreated) }},
	{Type: TypeData, Name: "Data", New: func() Message { return new(Data) }},
	{Type: TypeProgramLoaded, Name: "ProgramLoaded", New: func() Message { return new(ProgramLoaded) }},
	{Type: TypeKernelInfo, Name: "KernelInfo", New: func() Message { return new(KernelInfo) }},
	{Type: TypeStreamCreated, Name: "StreamCreated", New: func() Message { return new(StreamCreated) }},
	{Type: TypeFenceCreated, Name: "FenceCreated", New: func() Message { return new(FenceCreated) }},
	{Type: TypeRightsReply, Name: "RightsReply", New: func() Message { return new(RightsReply) }},
	{Type: TypeGranted, Name: "Granted", New: func() Message { return new(Granted) }},
	{Type: TypeMemInfoReply, Name: "MemInfoReply", New: func() Message { return new(MemInfoReply) }},
	{Type: TypeDuration, Name: "Duration", New: func() Message { return new(Duration) }},
	{Type: TypeSessionStat, Name: "SessionStat", New: func() Message { return new(SessionStat) }},
	{Type: TypeSessionAttached, Name: "SessionAttached", New: func() Message { return new(SessionAttached) }},
	{Type: TypeShmSegment, Name: "ShmSegment", New: func() Message { return new(ShmSegment) }},
	{Type: TypeShmStat, Name: "ShmStat", New: func() Message { return new(ShmStat) }},
	{Type: TypeRingOpened, Name: "RingOpened", New: func() Message { return new(RingOpened) }, FDs: 1},
	{Type: TypeStagingOpened, Name: "StagingOpened", New: func() Message { return new(StagingOpened) }, FDs: 1},
	{Type: TypePolicies, Name: "Policies", New: func() Message { return new(Policies) }},
	{Type: TypeTenants, Name: "Tenants", New: func() Message { return new(Tenants) }},
	{Type: TypePolicyLoaded, Name: "PolicyLoaded", New: func() Message { return new(PolicyLoaded) }},
	{Type: TypePolicyMapValues, Name: "PolicyMapValues", New: func() Message { return new(PolicyMapValues) }},
	{Type: TypeHostMapped, Name: "HostMapped", New: func() Message { return new(HostMapped) }, FDs: 1},
	{Type: TypeCompletionOpened, Name: "CompletionOpened", New: func() Message { return new(CompletionOpened) }, FDs: 1},
	{Type: TypeFenceTargets, Name: "FenceTargets", New: func() Message { return new(FenceTargets) }},
}

// tableIndex maps a Type below 256 to its row in messageTable, plus one.
var tableIndex [256]uint8

func init() {
	for i, info := range messageTable {
		if info.Type == 0 || info.Type > 255 || tableIndex[info.Type] != 0 {
			panic("v1: message table: bad or duplicate type " + strconv.Itoa(int(info.Type)))
		}
		tableIndex[info.Type] = uint8(i + 1)
	}
}

// Lookup returns the table row of t, and false for a type this version does not
// know (which a server answers with Unsupported).
func Lookup(t Type) (Info, bool) {
	if r := row(t); r != nil {
		return *r, true
	}
	return Info{}, false
}

// row returns t's row in the table, or nil.
func row(t Type) *Info {
	if int(t) >= len(tableIndex) || tableIndex[t] == 0 {
		return nil
	}
	return &messageTable[tableIndex[t]-1]
}

// Types returns every known type in table order: requests, then replies.
func Types() []Type {
	ts := make([]Type, len(messageTable))
	for i, info := range messageTable {
		ts[i] = info.Type
	}
	return ts
}

// String returns the type's name, or "type(N)" for an unknown type.
func (t Type) String() string {
	if info, ok := Lookup(t); ok {
		return info.Name
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// ReplyType returns the type of a successful reply to the request m: the table's
// Reply, except that a Memcpy DtoH is answered with Data.
func ReplyType(m Message) Type {
	if r, ok := m.(interface{ replyType() Type }); ok {
		return r.replyType()
	}
	if r := row(m.Type()); r != nil {
		return r.Reply
	}
	return 0
}

// CheckHeader checks a header that ParseHeader accepted against the table: a
// known type (else Unsupported), a reply type exactly in a reply frame, the
// Error flag exactly on an Error, NoReply only on a type that allows it, and
// the type's number of file descriptors (else Malformed). A receiver of replies
// uses it before decoding; servers use Admit, which includes it.
func CheckHeader(h Header) (Info, error) {
	info, err := checkFrame(h)
	if info == nil {
		return Info{}, err
	}
	return *info, err
}

func checkFrame(h Header) (*Info, error) {
	info := row(h.Type)
	if info == nil {
		return nil, Errorf(CodeUnsupported, "unknown message type %d", uint16(h.Type))
	}
	switch {
	case h.IsReply() != !info.IsRequest():
		if h.IsReply() {
			return info, Errorf(CodeMalformed, "request type %v in a reply frame", h.Type)
		}
		return info, Errorf(CodeMalformed, "reply type %v in a request frame", h.Type)
	case h.IsError() != (h.Type == TypeError):
		return info, Errorf(CodeMalformed, "%v frame with flags %v", h.Type, h.Flags)
	case h.NoReply() && !info.Async:
		return info, Errorf(CodeMalformed, "%v cannot be sent without a reply", h.Type)
	case h.FDs() != info.FDs:
		return info, Errorf(CodeMalformed, "%v frame with %d file descriptors, want %d", h.Type, h.FDs(), info.FDs)
	}
	return info, nil
}

// Admit decides whether a server on endpoint ep, for a session holding rights
// have, accepts the request whose header is h, before its payload is decoded.
// It is the one place "the interface is the permission" is enforced:
//
//   - an unknown type is Unsupported (the connection stays up);
//   - a request of another endpoint, or one needing a right the session lacks,
//     is PermissionDenied;
//   - a reply frame, a reply type, NoReply on a synchronous type or a wrong
//     number of file descriptors is Malformed.
//
// h must have come from ParseHeader. After decoding, call AdmitMessage.
// Where no session rights apply (the manager and control endpoints), pass
// AllSessionRights.
func Admit(ep Endpoint, have Rights, h Header) (Info, error) {
	info := row(h.Type)
	switch {
	case info == nil:
		return Info{}, Errorf(CodeUnsupported, "unknown message type %d", uint16(h.Type))
	case h.IsReply():
		return *info, Errorf(CodeMalformed, "%v reply sent to a server", h.Type)
	case !info.IsRequest():
		return *info, Errorf(CodeMalformed, "reply type %v in a request frame", h.Type)
	case info.Endpoints&ep == 0:
		return *info, Errorf(CodePermissionDenied, "%v is not accepted on the %v endpoint", h.Type, ep)
	case !have.Has(info.Right):
		return *info, Errorf(CodePermissionDenied, "%v needs right %v", h.Type, info.Right)
	}
	if _, err := checkFrame(h); err != nil {
		return *info, err
	}
	return *info, nil
}

// AdmitMessage makes the checks of Admit that need the decoded request m: a
// NoReply request must be one whose reply would be Empty (a Memcpy DtoH must
// be answered).
func AdmitMessage(h Header, m Message) error {
	if h.Flags&FlagNoReply != 0 && ReplyType(m) != TypeEmpty {
		return Errorf(CodeMalformed, "%v answered by %v cannot be sent without a reply", m.Type(), ReplyType(m))
	}
	return nil
}

// PutFrame appends a whole frame, header and payload, carrying m. The header's
// type and length come from m; flags must agree with the table (a reply type
// needs FlagReply, an Error also FlagError, the fd count must be the type's, and
// NoReply only where allowed), so that nothing this side sends is refused as
// malformed by the peer. On error nothing is appended.
// With a reused encoder, PutFrame does not allocate.
func (e *Encoder) PutFrame(id uint64, flags Flags, m Message) error {
	start := len(e.buf)
	e.buf = append(e.buf, make([]byte, HeaderSize)...)
	m.Encode(e)
	n := len(e.buf) - start - HeaderSize
	if n > MaxPayload {
		e.buf = e.buf[:start]
		return Errorf(CodeMalformed, "encode %v: %d byte payload exceeds the %d byte limit", m.Type(), n, MaxPayload)
	}
	h := Header{Length: uint32(n), Type: m.Type(), Flags: flags, ID: id}
	err := h.check()
	if err == nil {
		_, err = checkFrame(h)
	}
	if err == nil {
		err = AdmitMessage(h, m)
	}
	if err != nil {
		e.buf = e.buf[:start]
		return err
	}
	h.Put(e.buf[start:])
	return nil
}

// DecodeFrame decodes one whole frame: its header, checked against the table,
// and its payload, which must be exactly the header's length. Byte-slice fields
// of the message alias frame. An unknown type is Unsupported; every other
// failure is Malformed.
func DecodeFrame(frame []byte) (Header, Message, error) {
	h, err := ParseHeader(frame)
	if err != nil {
		return h, nil, err
	}
	if have := len(frame) - HeaderSize; have != int(h.Length) {
		return h, nil, Errorf(CodeMalformed, "frame holds %d payload bytes, header says %d", have, h.Length)
	}
	info, err := checkFrame(h)
	if err != nil {
		return h, nil, err
	}
	m := info.New()
	if err := Unmarshal(frame[HeaderSize:], m); err != nil {
		return h, nil, err
	}
	if err := AdmitMessage(h, m); err != nil {
		return h, nil, err
	}
	return h, m, nil
}
