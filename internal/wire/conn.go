package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"

	v1 "github.com/gpuos/gpuos/api/v1"
	"golang.org/x/sys/unix"
)

// Errors returned by wire. Each is a v1 error, so it can be sent to a peer as
// it is; compare with errors.Is against these or against the v1 sentinels.
var (
	// ErrFrameTooLarge: a frame's header announces more than the connection's
	// payload limit. The stream cannot be resynchronised: close the connection.
	ErrFrameTooLarge = v1.Errorf(v1.CodeMalformed, "frame too large")
	// ErrBadFDs: the file descriptors that arrived do not match what a frame's
	// header says it carries (too many for one message, missing, or a different
	// number). The connection cannot be trusted further.
	ErrBadFDs = v1.Errorf(v1.CodeMalformed, "file descriptors do not match the frame")
	// ErrConnLost: the peer went away (EOF in the middle of a frame, a reset,
	// or a client's connection that ended while calls were waiting).
	ErrConnLost = v1.Errorf(v1.CodeDeviceLost, "connection lost")
	// ErrClosed: this side closed the connection or client.
	ErrClosed = v1.Errorf(v1.CodeInvalidHandle, "connection closed")
	// ErrNotStream: a descriptor given to FromFD is not a Unix stream socket.
	ErrNotStream = v1.Errorf(v1.CodeInvalidArgument, "not a unix stream socket")
	// ErrTooManyFDs: more than v1.MaxFDs descriptors were given for one frame.
	ErrTooManyFDs = v1.Errorf(v1.CodeInvalidArgument, "too many file descriptors for one frame")
)

const (
	readBufSize = 32 << 10
	// keepWriteBuf is the encode buffer a Conn keeps between writes; a larger
	// one, grown by a big frame, is dropped after use.
	keepWriteBuf = 1 << 20
)

// Frame is one received frame.
type Frame struct {
	Header v1.Header
	// Payload holds exactly Header.Length bytes. It is allocated for this frame
	// and belongs to the caller, so decoded messages may alias it.
	Payload []byte
	// FDs are the descriptors that came with the frame (close-on-exec). They
	// belong to the caller, who must close them or hand them on.
	FDs []int
}

// CloseFDs closes the frame's descriptors and forgets them.
func (f *Frame) CloseFDs() {
	closeFDs(f.FDs)
	f.FDs = nil
}

// fdBatch is the descriptors one recvmsg returned, and the stream offsets
// [start, end) of the bytes that call read. The kernel delivers descriptors with
// the bytes of the sendmsg that sent them, and ends a read after such bytes, so
// the frame they belong to begins inside [start, end).
type fdBatch struct {
	start, end uint64
	fds        []int
}

// Conn is a framed connection over a Unix stream socket. Any number of
// goroutines may write at once (each frame is sent whole, under a lock); reads
// are meant for one goroutine at a time and are serialised.
type Conn struct {
	uc  *net.UnixConn
	raw syscall.RawConn

	rmu    sync.Mutex // guards the read side: the fields below, up to wmu
	max    uint32     // largest payload accepted
	rbuf   []byte
	rpos   int    // next unread byte in rbuf
	rend   int    // end of the buffered bytes in rbuf
	rseen  uint64 // bytes received so far: the stream offset of rbuf[rend]
	fdq    []fdBatch
	oob    []byte
	rerr   error // sticky: the stream is out of step
	closed bool
	// Arguments and results of the recvmsg in progress; readFn is made once so
	// that a read does not allocate a closure.
	rp                []byte
	rn, roobn, rflags int
	rerrno            error
	readFn            func(fd uintptr) bool

	wmu  sync.Mutex // guards the write side: the fields below
	enc  v1.Encoder
	werr error // sticky: a frame was sent in part
	iov  [2][]byte
	// Arguments and results of the sendmsg in progress, as for reads.
	wp, woob []byte
	wn       int
	werrno   error
	writeFn  func(fd uintptr) bool
}

// NewConn wraps a connected Unix stream socket. The Conn owns uc from now on.
func NewConn(uc *net.UnixConn) (*Conn, error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("wrap unix conn: %w", err)
	}
	c := &Conn{
		uc:   uc,
		raw:  raw,
		max:  v1.MaxPayload,
		rbuf: make([]byte, readBufSize),
		oob:  make([]byte, unix.CmsgSpace(v1.MaxFDs*4)),
	}
	c.readFn = func(fd uintptr) bool {
		for {
			c.rn, c.roobn, c.rflags, _, c.rerrno = unix.Recvmsg(int(fd), c.rp, c.oob, unix.MSG_CMSG_CLOEXEC)
			if c.rerrno != unix.EINTR {
				return c.rerrno != unix.EAGAIN
			}
		}
	}
	c.writeFn = func(fd uintptr) bool {
		for {
			c.wn, c.werrno = unix.SendmsgN(int(fd), c.wp, c.woob, nil, unix.MSG_NOSIGNAL)
			if c.werrno != unix.EINTR {
				return c.werrno != unix.EAGAIN
			}
		}
	}
	return c, nil
}

// UnixConn returns the underlying socket, for deadlines and addresses. Do not
// read from or write to it directly.
func (c *Conn) UnixConn() *net.UnixConn { return c.uc }

// SetMaxPayload lowers the largest payload ReadFrame accepts (v1.MaxPayload by
// default; larger values are clamped to it).
func (c *Conn) SetMaxPayload(n uint32) {
	c.rmu.Lock()
	c.max = min(n, v1.MaxPayload)
	c.rmu.Unlock()
}

// Close closes the connection and any received descriptors not yet handed out
// with a frame. It unblocks a ReadFrame in progress.
func (c *Conn) Close() error {
	err := c.uc.Close()
	c.rmu.Lock()
	for _, b := range c.fdq {
		closeFDs(b.fds)
	}
	c.fdq = nil
	c.closed = true
	c.rmu.Unlock()
	return err
}

// ReadFrame reads the next frame. It returns io.EOF when the peer closed the
// connection between frames, and an error wrapping io.ErrUnexpectedEOF and
// ErrConnLost when it closed in the middle of one.
//
// A header that fails v1.ParseHeader or announces more than the payload limit
// gives a Malformed error together with the header as read (so a server can
// answer its ID); after that, and after a descriptor mismatch (ErrBadFDs) or
// an error in the middle of a payload, the stream is out of step and every
// later ReadFrame fails: close the connection. A deadline that expires before
// a frame's header is complete can be retried.
//
// ReadFrame checks only framing, not the header against the message table:
// see v1.Admit and v1.CheckHeader.
func (c *Conn) ReadFrame() (Frame, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return Frame{}, c.rerr
	}
	if err := c.fill(v1.HeaderSize); err != nil {
		if errors.Is(err, io.EOF) {
			if c.rend == c.rpos {
				return Frame{}, io.EOF
			}
			err = fmt.Errorf("read frame header: %w: %w", ErrConnLost, io.ErrUnexpectedEOF)
			c.rerr = err
		}
		return Frame{}, err
	}
	start := c.rseen - uint64(c.rend-c.rpos) // stream offset of the frame's first byte
	h, err := v1.ParseHeader(c.rbuf[c.rpos:c.rend])
	if err == nil && h.Length > c.max {
		err = fmt.Errorf("%w: %d byte payload, limit %d", ErrFrameTooLarge, h.Length, c.max)
	}
	if err != nil {
		c.rerr = err
		return Frame{Header: h}, err
	}
	c.rpos += v1.HeaderSize

	var payload []byte
	if h.Length > 0 {
		payload = make([]byte, h.Length)
		n := copy(payload, c.rbuf[c.rpos:c.rend])
		c.rpos += n
		for n < len(payload) {
			var err error
			if len(payload)-n >= len(c.rbuf)/2 {
				// Large remainder: read straight into the payload.
				var m int
				m, err = c.recv(payload[n:])
				n += m
			} else if err = c.fill(1); err == nil {
				m := copy(payload[n:], c.rbuf[c.rpos:c.rend])
				c.rpos += m
				n += m
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = fmt.Errorf("read %v payload: %w: %w", h.Type, ErrConnLost, io.ErrUnexpectedEOF)
				} else {
					err = fmt.Errorf("read %v payload: %w", h.Type, err)
				}
				c.rerr = err
				return Frame{Header: h}, err
			}
		}
	}
	fds, err := c.claimFDs(start, h.FDs())
	if err != nil {
		c.rerr = err
		return Frame{Header: h}, err
	}
	return Frame{Header: h, Payload: payload, FDs: fds}, nil
}

// fill reads until at least need bytes are buffered.
func (c *Conn) fill(need int) error {
	if c.rpos == c.rend {
		c.rpos, c.rend = 0, 0
	}
	for c.rend-c.rpos < need {
		if c.rpos > 0 && len(c.rbuf)-c.rpos < need {
			c.rend = copy(c.rbuf, c.rbuf[c.rpos:c.rend])
			c.rpos = 0
		}
		n, err := c.recv(c.rbuf[c.rend:])
		c.rend += n
		if err != nil {
			return err
		}
	}
	return nil
}

// recv does one recvmsg into p, queueing any descriptors that come with it.
func (c *Conn) recv(p []byte) (int, error) {
	if c.closed {
		return 0, ErrClosed
	}
	c.rp = p
	err := c.raw.Read(c.readFn)
	c.rp = nil
	if err != nil {
		return 0, err
	}
	if c.rerrno != nil {
		if c.rerrno == unix.ECONNRESET {
			return 0, fmt.Errorf("%w: %w", ErrConnLost, os.NewSyscallError("recvmsg", c.rerrno))
		}
		return 0, os.NewSyscallError("recvmsg", c.rerrno)
	}
	n := c.rn
	var fdErr error
	if c.roobn > 0 {
		fdErr = c.queueFDs(c.oob[:c.roobn], uint64(n))
	}
	if c.rflags&unix.MSG_CTRUNC != 0 && fdErr == nil {
		fdErr = fmt.Errorf("%w: more than %d descriptors in one message", ErrBadFDs, v1.MaxFDs)
	}
	c.rseen += uint64(n)
	if fdErr != nil {
		// The stream is out of step: nothing queued can be matched any more.
		for _, b := range c.fdq {
			closeFDs(b.fds)
		}
		c.fdq = nil
		c.rerr = fdErr
		return n, fdErr
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// queueFDs records the descriptors in a control message that came with n bytes.
func (c *Conn) queueFDs(oob []byte, n uint64) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("%w: control message: %v", ErrBadFDs, err)
	}
	var fds []int
	for i := range msgs {
		if msgs[i].Header.Level != unix.SOL_SOCKET || msgs[i].Header.Type != unix.SCM_RIGHTS {
			continue
		}
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			closeFDs(fds)
			return fmt.Errorf("%w: rights message: %v", ErrBadFDs, err)
		}
		fds = append(fds, got...)
	}
	if len(fds) > 0 {
		c.fdq = append(c.fdq, fdBatch{start: c.rseen, end: c.rseen + n, fds: fds})
	}
	return nil
}

// claimFDs takes the n descriptors of the frame starting at stream offset
// start, closing strays that arrived with earlier frames that claimed none.
func (c *Conn) claimFDs(start uint64, n int) ([]int, error) {
	for len(c.fdq) > 0 && c.fdq[0].end <= start {
		closeFDs(c.fdq[0].fds)
		c.fdq = c.fdq[1:]
	}
	if n == 0 {
		return nil, nil
	}
	if len(c.fdq) == 0 || c.fdq[0].start > start {
		return nil, fmt.Errorf("%w: frame carries %d, none arrived with it", ErrBadFDs, n)
	}
	b := c.fdq[0]
	c.fdq = c.fdq[1:]
	if len(b.fds) != n {
		closeFDs(b.fds)
		return nil, fmt.Errorf("%w: frame carries %d, %d arrived with it", ErrBadFDs, n, len(b.fds))
	}
	return b.fds, nil
}

// WriteMessage sends m as one frame with the given ID and flags, and fds
// attached (the header's descriptor count is set from len(fds)). Flags must
// agree with the message table: v1.FlagReply for a reply type,
// FlagReply|FlagError for a *v1.Error, FlagNoReply only where allowed. The
// descriptors stay open and owned by the caller. It does not allocate when
// no descriptors are sent.
func (c *Conn) WriteMessage(id uint64, flags v1.Flags, m v1.Message, fds ...int) error {
	if len(fds) > v1.MaxFDs {
		return fmt.Errorf("write %v: %w: %d", m.Type(), ErrTooManyFDs, len(fds))
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	c.enc.Reset()
	if err := c.enc.PutFrame(id, flags.WithFDs(len(fds)), m); err != nil {
		return fmt.Errorf("write %v: %w", m.Type(), err)
	}
	c.iov = [2][]byte{c.enc.Bytes(), nil}
	err := c.send(fds)
	if cap(c.enc.Bytes()) > keepWriteBuf {
		c.enc = v1.Encoder{}
	}
	if err != nil {
		return fmt.Errorf("write %v: %w", m.Type(), err)
	}
	return nil
}

// WriteFrame sends a header and a raw payload as one frame with fds attached.
// It sets h.Length from the payload and the descriptor count from len(fds),
// and otherwise sends h as given: use it to forward frames, and WriteMessage
// to send messages.
func (c *Conn) WriteFrame(h v1.Header, payload []byte, fds ...int) error {
	if len(payload) > v1.MaxPayload {
		return fmt.Errorf("write frame: %w: %d byte payload", ErrFrameTooLarge, len(payload))
	}
	if len(fds) > v1.MaxFDs {
		return fmt.Errorf("write frame: %w: %d", ErrTooManyFDs, len(fds))
	}
	h.Length = uint32(len(payload))
	h.Flags = h.Flags.WithFDs(len(fds))
	var hdr [v1.HeaderSize]byte
	h.Put(hdr[:])
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	c.iov = [2][]byte{hdr[:], payload}
	if err := c.send(fds); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// send writes c.iov whole, with fds attached to its first byte. The caller
// holds wmu.
func (c *Conn) send(fds []int) error {
	if len(fds) > 0 {
		c.woob = unix.UnixRights(fds...)
	}
	sent := 0
	defer func() { c.iov, c.wp, c.woob = [2][]byte{}, nil, nil }()
	for i := 0; i < len(c.iov); {
		if len(c.iov[i]) == 0 {
			i++
			continue
		}
		// Two buffers are sent by two sendmsg calls; the descriptors go with
		// the first, which holds the frame's first byte.
		c.wp = c.iov[i]
		err := c.raw.Write(c.writeFn)
		if err == nil {
			err = c.werrno
			if err != nil {
				err = os.NewSyscallError("sendmsg", err)
				if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) {
					err = fmt.Errorf("%w: %w", ErrConnLost, err)
				}
			}
		}
		if err != nil {
			if sent > 0 {
				// The peer has part of a frame: nothing more can be sent.
				c.werr = fmt.Errorf("connection unusable after a partial frame: %w", err)
			}
			return err
		}
		sent += c.wn
		c.woob = nil
		c.iov[i] = c.iov[i][c.wn:]
	}
	return nil
}

// Cred is the identity of the process at the other end, as the kernel recorded
// it when the connection was made (SO_PEERCRED).
type Cred struct {
	PID int32
	UID uint32
	GID uint32
}

// PeerCred returns the peer's credentials.
func (c *Conn) PeerCred() (Cred, error) {
	var cred *unix.Ucred
	var serr error
	err := c.raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return Cred{}, fmt.Errorf("get peer credentials: %w", err)
	}
	return Cred{PID: cred.Pid, UID: cred.Uid, GID: cred.Gid}, nil
}

// SocketPair returns the two descriptors of a new connected Unix stream socket
// pair (close-on-exec), for handing one end to another process: the manager
// sends one to a client and the other to a driver.
func SocketPair() (fd0, fd1 int, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, fmt.Errorf("make socket pair: %w", os.NewSyscallError("socketpair", err))
	}
	return fds[0], fds[1], nil
}

// Pair returns the two ends of a new connected Unix stream socket pair as Conns.
func Pair() (*Conn, *Conn, error) {
	fd0, fd1, err := SocketPair()
	if err != nil {
		return nil, nil, err
	}
	a, err := FromFD(fd0)
	if err != nil {
		unix.Close(fd1)
		return nil, nil, err
	}
	b, err := FromFD(fd1)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, b, nil
}

// FromFD turns a descriptor, typically one received with a frame, into a Conn.
// It takes ownership of fd in every case: on error fd is closed. The descriptor
// must be a connected Unix stream socket (else ErrNotStream).
func FromFD(fd int) (*Conn, error) {
	f := os.NewFile(uintptr(fd), "wire")
	if f == nil {
		return nil, fmt.Errorf("conn from fd %d: %w", fd, ErrNotStream)
	}
	nc, err := net.FileConn(f) // duplicates the descriptor
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("conn from fd %d: %w: %v", fd, ErrNotStream, err)
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("conn from fd %d: %w: %T", fd, ErrNotStream, nc)
	}
	c, err := NewConn(uc)
	if err != nil {
		uc.Close()
		return nil, err
	}
	var typ int
	var serr error
	if err := c.raw.Control(func(fd uintptr) { typ, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE) }); err != nil || serr != nil || typ != unix.SOCK_STREAM {
		uc.Close()
		return nil, fmt.Errorf("conn from fd %d: %w (socket type %d)", fd, ErrNotStream, typ)
	}
	return c, nil
}

// Dial connects to a Unix stream socket at path.
func Dial(ctx context.Context, path string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", path, err)
	}
	c, err := NewConn(nc.(*net.UnixConn))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
