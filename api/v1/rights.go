package v1

import (
	"strconv"
	"strings"
)

// Rights is a set of rights: what a session may do, or what a holder may do with
// a buffer. Rights only narrow: a session can drop rights (Restrict) but never
// gain them, and a grant carries at most what the granter holds.
type Rights uint64

// Session rights. A request that needs a right its session lacks is refused with
// PermissionDenied before it is decoded: the interface is the permission.
const (
	RightAlloc  Rights = 1 << 0 // create buffers
	RightLoad   Rights = 1 << 1 // load programs, look up kernels and globals
	RightLaunch Rights = 1 << 2 // launch kernels
	RightCopy   Rights = 1 << 3 // memcpy, memset, read and write buffers
	RightGrant  Rights = 1 << 4 // grant buffers to other sessions and attach grants
	RightStream Rights = 1 << 5 // create streams and fences

	// AllSessionRights is every session right.
	AllSessionRights = RightAlloc | RightLoad | RightLaunch | RightCopy | RightGrant | RightStream
)

// Buffer rights, carried by a grant. (Named RightBuffer… because BufferRead and
// BufferWrite are message types.)
const (
	RightBufferRead  Rights = 1 << 16
	RightBufferWrite Rights = 1 << 17
	RightBufferGrant Rights = 1 << 18 // the receiver may grant it on

	// AllBufferRights is every buffer right.
	AllBufferRights = RightBufferRead | RightBufferWrite | RightBufferGrant
)

var rightNames = [...]struct {
	r    Rights
	name string
}{
	{RightAlloc, "alloc"},
	{RightLoad, "load"},
	{RightLaunch, "launch"},
	{RightCopy, "copy"},
	{RightGrant, "grant"},
	{RightStream, "stream"},
	{RightBufferRead, "buffer-read"},
	{RightBufferWrite, "buffer-write"},
	{RightBufferGrant, "buffer-grant"},
}

// Has reports whether r holds every right in want.
func (r Rights) Has(want Rights) bool { return r&want == want }

// String returns the rights joined by "|" ("launch|copy"), "none" for the empty
// set, and unknown bits in hex.
func (r Rights) String() string {
	if r == 0 {
		return "none"
	}
	var parts []string
	for _, n := range rightNames {
		if r&n.r != 0 {
			parts = append(parts, n.name)
			r &^= n.r
		}
	}
	if r != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(r), 16))
	}
	return strings.Join(parts, "|")
}

// Endpoint is a set of the places a request may be sent to.
type Endpoint uint8

// Endpoints.
const (
	// EndpointManager is the manager's socket (gpuos serve), spoken by clients.
	EndpointManager Endpoint = 1 << 0
	// EndpointDriver is a session connection from a client to its driver process;
	// the connection itself is the session capability.
	EndpointDriver Endpoint = 1 << 1
	// EndpointControl is the manager's internal connection to a driver process.
	EndpointControl Endpoint = 1 << 2

	// AllEndpoints is every endpoint (only Hello goes everywhere).
	AllEndpoints = EndpointManager | EndpointDriver | EndpointControl
)

// String returns the endpoints joined by "|", or "none".
func (e Endpoint) String() string {
	var parts []string
	for _, n := range [...]struct {
		e    Endpoint
		name string
	}{{EndpointManager, "manager"}, {EndpointDriver, "driver"}, {EndpointControl, "control"}} {
		if e&n.e != 0 {
			parts = append(parts, n.name)
			e &^= n.e
		}
	}
	if e != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(e), 16))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Dir is the direction of a Memcpy.
type Dir uint8

// Copy directions.
const (
	DirHtoD Dir = 1 // host to device: the request carries the bytes
	DirDtoH Dir = 2 // device to host: the reply (Data) carries the bytes
	DirDtoD Dir = 3 // device to device
)

// Valid reports whether d is a known direction.
func (d Dir) Valid() bool { return d >= DirHtoD && d <= DirDtoD }

// String returns "HtoD", "DtoH", "DtoD" or "dir(N)".
func (d Dir) String() string {
	switch d {
	case DirHtoD:
		return "HtoD"
	case DirDtoH:
		return "DtoH"
	case DirDtoD:
		return "DtoD"
	}
	return "dir(" + strconv.Itoa(int(d)) + ")"
}

// Role is what a Hello says its sender is.
type Role uint8

// Roles.
const (
	RoleClient  Role = 1 // an application (Go client or CUDA shim), on the manager or a session connection
	RoleControl Role = 2 // the manager, on a driver's control connection
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleClient || r == RoleControl }

// String returns "client", "control" or "role(N)".
func (r Role) String() string {
	switch r {
	case RoleClient:
		return "client"
	case RoleControl:
		return "control"
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}
