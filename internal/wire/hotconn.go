package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
)

// Errors returned by HotConn.
var (
	// ErrSocketAfterRings: the peer sent a request on the socket after it had
	// started sending on the rings. The session's order of requests is lost.
	ErrSocketAfterRings = v1.Errorf(v1.CodeMalformed, "request on the socket after the session moved to rings")
	// ErrRingsInUse: UseRings on a connection that already has rings.
	ErrRingsInUse = v1.Errorf(v1.CodeInvalidArgument, "the session already has rings")
)

// keepReadBuf bounds a ring frame buffer HotConn keeps for the next read.
const keepReadBuf = 64 << 10

// HotConn states.
const (
	hotSocket    int32 = iota // requests come on the socket
	hotPending                // rings offered: the peer's next request says where it sends
	hotRings                  // requests come on the submission ring
	hotDowngrade              // the peer declined the rings: a socket frame waits in sock
)

// HotConn is the server end of a session connection whose requests can move
// from the socket onto shared-memory rings. It implements Transport for
// Server: until UseRings it is the socket; after it, the peer's next request
// decides. If that request comes on the submission ring, every later request
// must too, and replies go on the completion ring (those that carry
// descriptors still go on the socket); if it comes on the socket, the rings
// are dropped and the socket serves as before.
//
// Once on rings, a goroutine watches the socket: its end lets ReadFrame
// return what the peer had published and then io.EOF (or the socket's error),
// and a request on it ends the session with ErrSocketAfterRings.
//
// ReadFrame and WriteMessage belong to the serving goroutine; Close may come
// from any goroutine.
type HotConn struct {
	conn  *Conn
	state atomic.Int32

	// Set by UseRings on the serving goroutine; Close reads them under mu.
	mu      sync.Mutex
	sq      *ring.Consumer
	cq      *ring.Producer
	release func()
	dropped bool
	watched chan struct{} // closed when the socket watcher has stopped

	sock   chan Frame            // the socket frame that declined the rings
	failed atomic.Pointer[error] // why the rings stopped, if not a clean end

	wmu sync.Mutex // guards enc
	enc v1.Encoder

	// The serving goroutine's: the buffer of the frame ReadFrame returned
	// last from the ring, and one Recycle gave back for the next read.
	last, spare []byte

	closeOnce sync.Once
	closeErr  error
}

// NewHotConn wraps a session connection, which it owns from now on.
func NewHotConn(c *Conn) *HotConn { return &HotConn{conn: c, sock: make(chan Frame, 1)} }

// Conn returns the socket.
func (h *HotConn) Conn() *Conn { return h.conn }

// OnRings reports whether requests now come on the rings.
func (h *HotConn) OnRings() bool { return h.state.Load() == hotRings }

// UseRings offers the peer rings in mem, laid out by InitRings: it attaches
// the consuming end of the submission ring and the producing end of the
// completion ring. Call it on the serving goroutine, from the handler of the
// request that set the rings up; the offer takes effect from the next
// ReadFrame. release runs once the rings are dropped (the peer declined them,
// or Close), when nothing touches mem any more.
func (h *HotConn) UseRings(mem []byte, submit, complete int, opts ring.Options, release func()) error {
	if h.state.Load() != hotSocket {
		return ErrRingsInUse
	}
	sqMem, cqMem, err := splitRings(mem, submit, complete)
	if err != nil {
		return err
	}
	sq, err := ring.NewConsumer(sqMem, submit, ringMessage, opts)
	if err != nil {
		return fmt.Errorf("attach submission ring: %w", err)
	}
	cq, err := ring.NewProducer(cqMem, complete, ringMessage, opts)
	if err != nil {
		sq.Close()
		return fmt.Errorf("attach completion ring: %w", err)
	}
	h.mu.Lock()
	if h.dropped {
		h.mu.Unlock()
		sq.Close()
		cq.Close()
		return net.ErrClosed
	}
	h.sq, h.cq, h.release = sq, cq, release
	h.watched = make(chan struct{})
	h.mu.Unlock()
	h.state.Store(hotPending)
	go h.watch()
	return nil
}

// watch reads the socket while requests may come on the rings.
func (h *HotConn) watch() {
	defer close(h.watched)
	f, err := h.conn.ReadFrame()
	switch {
	case err == nil:
		if h.state.CompareAndSwap(hotPending, hotDowngrade) {
			h.sock <- f
			h.sq.Interrupt()
			return
		}
		f.CloseFDs()
		h.fail(fmt.Errorf("%w: %v", ErrSocketAfterRings, f.Header.Type))
		h.sq.Close()
	case errors.Is(err, io.EOF):
		h.sq.Shutdown(io.EOF) // serve what the peer sent before it went
	case errors.Is(err, net.ErrClosed):
		h.sq.Close()
	default:
		h.fail(err)
		h.sq.Shutdown(err)
	}
}

func (h *HotConn) fail(err error) { h.failed.CompareAndSwap(nil, &err) }

// ReadFrame returns the next request, from the socket or the submission ring.
func (h *HotConn) ReadFrame() (Frame, error) {
	for {
		switch h.state.Load() {
		case hotSocket:
			return h.conn.ReadFrame()
		case hotDowngrade:
			f := <-h.sock
			h.dropRings()
			h.state.Store(hotSocket)
			return f, nil
		}
		msg, err := h.sq.Read(h.spare[:0])
		h.spare, h.last = nil, nil
		if errors.Is(err, ring.ErrInterrupted) {
			continue
		}
		if err != nil {
			return Frame{}, h.ringErr(err)
		}
		if !h.state.CompareAndSwap(hotPending, hotRings) && h.state.Load() != hotRings {
			// The peer sent on both: its order of requests is lost.
			h.fail(fmt.Errorf("%w: and on the ring", ErrSocketAfterRings))
			return Frame{}, *h.failed.Load()
		}
		h.last = msg
		return frameFromRing(msg)
	}
}

// ringErr is what a failed read of the submission ring means for the session.
func (h *HotConn) ringErr(err error) error {
	if p := h.failed.Load(); p != nil && !errors.Is(err, ring.ErrCorrupt) {
		return *p
	}
	if errors.Is(err, ring.ErrClosed) {
		return fmt.Errorf("read frame: %w", net.ErrClosed)
	}
	return err // io.EOF, or the ring is corrupt
}

// TryReadFrame is ReadFrame without waiting, once requests come on the
// rings: ok is false if no whole request is there yet, or the connection is
// not on rings. Like ReadFrame, it belongs to the serving goroutine (or to
// whichever goroutine serves now, Server.Hedge).
func (h *HotConn) TryReadFrame() (f Frame, ok bool, err error) {
	if h.state.Load() != hotRings {
		return Frame{}, false, nil
	}
	msg, ok, err := h.sq.TryRead(h.spare[:0])
	if err == nil && !ok {
		return Frame{}, false, nil
	}
	h.spare, h.last = nil, nil
	if err != nil {
		return Frame{}, false, h.ringErr(err)
	}
	h.last = msg
	f, err = frameFromRing(msg)
	return f, err == nil, err
}

// Watch waits, without reading, for up to spin (or until quit reports true)
// for a request on the submission ring, or its end, that has waited unread
// for stale (0: none), and reports whether one did; false at once when the
// connection is not on rings. Any goroutine may watch while another serves
// (Server.Hedge).
func (h *HotConn) Watch(spin, stale time.Duration, quit func() bool) bool {
	if h.state.Load() != hotRings {
		return false
	}
	return h.sq.Watch(spin, stale, quit)
}

// Recycle says that nothing refers to the frame ReadFrame returned last any
// more: the next frame read from the ring may reuse its memory. Serve calls
// it after a request of a type the handler keeps nothing of (Server.Reuse).
func (h *HotConn) Recycle() {
	if cap(h.last) <= keepReadBuf {
		h.spare = h.last
	}
	h.last = nil
}

// Pending reports whether another request already waits on the submission
// ring behind the ones ReadFrame returned (a hint, for batching).
func (h *HotConn) Pending() bool {
	if h.state.Load() != hotRings {
		return false
	}
	return h.sq.Pending()
}

// NextType returns the type of the request waiting on the submission ring
// behind the ones ReadFrame returned, if one is there whole enough to tell
// (a hint, as Pending is).
func (h *HotConn) NextType() (v1.Type, bool) {
	if h.state.Load() != hotRings {
		return 0, false
	}
	var hdr [v1.HeaderSize]byte
	if h.sq.Peek(hdr[:]) < len(hdr) {
		return 0, false
	}
	hd, err := v1.ParseHeader(hdr[:])
	if err != nil {
		return 0, false
	}
	return hd.Type, true
}

// WriteMessage sends a reply: on the completion ring once the peer may read
// it there, except that a frame with descriptors always goes on the socket.
func (h *HotConn) WriteMessage(id uint64, flags v1.Flags, m v1.Message, fds ...int) error {
	st := h.state.Load()
	if st == hotSocket || st == hotDowngrade || len(fds) > 0 {
		return h.conn.WriteMessage(id, flags, m, fds...)
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	h.enc.Reset()
	if err := h.enc.PutFrame(id, flags, m); err != nil {
		return fmt.Errorf("write %v: %w", m.Type(), err)
	}
	err := h.cq.Write(h.enc.Bytes())
	if cap(h.enc.Bytes()) > keepWriteBuf {
		h.enc = v1.Encoder{}
	}
	if err != nil {
		if errors.Is(err, ring.ErrClosed) {
			err = net.ErrClosed
		}
		return fmt.Errorf("write %v: %w", m.Type(), err)
	}
	return nil
}

// dropRings closes the ring ends and releases their memory, once.
func (h *HotConn) dropRings() {
	h.mu.Lock()
	if h.dropped {
		h.mu.Unlock()
		return
	}
	h.dropped = true
	sq, cq, release, watched := h.sq, h.cq, h.release, h.watched
	h.mu.Unlock()
	if sq == nil {
		return
	}
	if watched != nil {
		<-watched // the watcher touches sq until it stops
	}
	sq.Close()
	cq.Close()
	if release != nil {
		release()
	}
}

// Close closes the socket and the rings. It unblocks a ReadFrame or
// WriteMessage in progress, and returns once the rings' memory is released.
func (h *HotConn) Close() error {
	h.closeOnce.Do(func() {
		h.closeErr = h.conn.Close() // stops the watcher
		h.mu.Lock()
		sq, cq := h.sq, h.cq
		h.mu.Unlock()
		if sq != nil { // wake the serving goroutine before waiting for it
			sq.Close()
			cq.Close()
		}
		h.dropRings()
	})
	return h.closeErr
}
