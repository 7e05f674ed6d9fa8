package cap

import "fmt"

// Kind is the type of object a handle names. A handle looked up with the wrong
// kind is an invalid handle.
type Kind uint8

// Kinds of objects.
const (
	KindInvalid Kind = iota
	KindSession
	KindBuffer
	KindProgram
	KindKernel
	KindStream
	KindFence
	KindGrant   // a buffer offered to other sessions; revoking it unmaps every receiver
	KindMapping // a granted buffer attached into a receiving session's window
	KindSegment // a shared memory segment a session may attach (the shm-like API)
	kindMax
)

var kindNames = [...]string{
	KindInvalid: "invalid",
	KindSession: "session",
	KindBuffer:  "buffer",
	KindProgram: "program",
	KindKernel:  "kernel",
	KindStream:  "stream",
	KindFence:   "fence",
	KindGrant:   "grant",
	KindMapping: "mapping",
	KindSegment: "segment",
}

// Valid reports whether k names a kind of object.
func (k Kind) Valid() bool { return k > KindInvalid && k < kindMax }

func (k Kind) String() string {
	if k < kindMax {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}
