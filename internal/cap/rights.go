package cap

import (
	"fmt"
	"math/bits"
	"strings"
)

// Rights is a set of permissions carried by a handle. The bit values are the
// wire protocol's, the same as v1.Rights (convert with cap.Rights(r)):
// session rights in the low bits, buffer rights from bit 16. A session's
// handle may carry buffer rights too, which bound those of its buffers.
type Rights uint64

// Session rights.
const (
	RightAlloc  Rights = 1 << 0 // create buffers
	RightLoad   Rights = 1 << 1 // load programs, look up kernels and globals
	RightLaunch Rights = 1 << 2 // launch kernels
	RightCopy   Rights = 1 << 3 // memcpy, memset, read and write buffers
	RightGrant  Rights = 1 << 4 // grant buffers to other sessions and attach grants
	RightStream Rights = 1 << 5 // create streams and fences

	AllSessionRights = RightAlloc | RightLoad | RightLaunch | RightCopy | RightGrant | RightStream
)

// Buffer rights.
const (
	RightBufferRead  Rights = 1 << 16
	RightBufferWrite Rights = 1 << 17
	RightBufferGrant Rights = 1 << 18

	AllBufferRights = RightBufferRead | RightBufferWrite | RightBufferGrant
)

// AllRights is every right this version knows.
const AllRights = AllSessionRights | AllBufferRights

var rightNames = map[Rights]string{
	RightAlloc:       "alloc",
	RightLoad:        "load",
	RightLaunch:      "launch",
	RightCopy:        "copy",
	RightGrant:       "grant",
	RightStream:      "stream",
	RightBufferRead:  "buffer-read",
	RightBufferWrite: "buffer-write",
	RightBufferGrant: "buffer-grant",
}

// Has reports whether r includes every right in need.
func (r Rights) Has(need Rights) bool { return r&need == need }

// String lists the rights as "alloc|load|…"; unknown bits print in hex.
func (r Rights) String() string {
	if r == 0 {
		return "none"
	}
	var parts []string
	for rest := uint64(r); rest != 0; rest &= rest - 1 {
		bit := Rights(1) << bits.TrailingZeros64(rest)
		if name, ok := rightNames[bit]; ok {
			parts = append(parts, name)
		} else {
			parts = append(parts, fmt.Sprintf("%#x", uint64(bit)))
		}
	}
	return strings.Join(parts, "|")
}
