package wire

import (
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
)

// Transport carries frames between the two ends of a connection: a Conn (the
// socket), or a HotConn (the socket, until the session moves onto
// shared-memory rings). Server serves any Transport.
type Transport interface {
	// ReadFrame returns the next frame; io.EOF when the peer ended cleanly.
	ReadFrame() (Frame, error)
	// WriteMessage sends m as one frame with fds attached.
	WriteMessage(id uint64, flags v1.Flags, m v1.Message, fds ...int) error
	// Close ends the connection and unblocks a ReadFrame in progress.
	Close() error
}

var (
	_ Transport = (*Conn)(nil)
	_ Transport = (*HotConn)(nil)
)

// ringMessage is the longest message a ring carries: one whole frame.
const ringMessage = v1.HeaderSize + v1.MaxPayload

// RingBytes returns the shared memory that a session's rings take: the
// submission ring (client to driver, submit data bytes) and after it the
// completion ring (driver to client, complete data bytes).
func RingBytes(submit, complete int) int { return ring.Bytes(submit) + ring.Bytes(complete) }

// InitRings lays out a session's two rings in mem; the side that created the
// memory (the driver) calls it before either end attaches.
func InitRings(mem []byte, submit, complete int) error {
	if len(mem) < RingBytes(submit, complete) {
		return fmt.Errorf("init rings: %w: %d bytes for rings of %d and %d", ring.ErrLayout, len(mem), submit, complete)
	}
	if err := ring.Init(mem, submit); err != nil {
		return fmt.Errorf("init submission ring: %w", err)
	}
	if err := ring.Init(mem[ring.Bytes(submit):], complete); err != nil {
		return fmt.Errorf("init completion ring: %w", err)
	}
	return nil
}

// splitRings returns the memory of the submission and the completion ring.
func splitRings(mem []byte, submit, complete int) (sq, cq []byte, err error) {
	if submit < 0 || complete < 0 || len(mem) < RingBytes(submit, complete) {
		return nil, nil, fmt.Errorf("%w: %d bytes for rings of %d and %d", ring.ErrLayout, len(mem), submit, complete)
	}
	return mem[:ring.Bytes(submit)], mem[ring.Bytes(submit):], nil
}

// frameFromRing turns a message read off a ring into a Frame. The message must
// be exactly one frame, and no frame on a ring carries descriptors. The
// payload aliases msg, which must belong to the frame alone.
func frameFromRing(msg []byte) (Frame, error) {
	h, err := v1.ParseHeader(msg)
	if err != nil {
		return Frame{Header: h}, fmt.Errorf("frame from ring: %w", err)
	}
	if n := len(msg) - v1.HeaderSize; n != int(h.Length) {
		return Frame{Header: h}, fmt.Errorf("frame from ring: %w", v1.Errorf(v1.CodeMalformed, "%d payload bytes, header says %d", n, h.Length))
	}
	if h.FDs() != 0 {
		return Frame{Header: h}, fmt.Errorf("frame from ring: %w: %d claimed", ErrBadFDs, h.FDs())
	}
	return Frame{Header: h, Payload: msg[v1.HeaderSize:]}, nil
}
