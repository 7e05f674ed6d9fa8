package wire

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
)

// ErrFDsOnRings: a request with descriptors on a client whose requests go on
// rings, which cannot carry them.
var ErrFDsOnRings = v1.Errorf(v1.CodeInvalidArgument, "descriptors cannot be sent on rings")

// clientRings is a client's side of a session's rings. Any goroutine may send
// (they take turns under sendMu); replies on the completion ring are read by
// whichever waiting caller holds readMu, which routes every reply it reads to
// its caller, so that a caller alone needs no goroutine switch to get its
// reply.
type clientRings struct {
	sq      *ring.Producer
	cq      *ring.Consumer
	release func()

	sendMu  sync.Mutex
	encs    sync.Pool                        // *v1.Encoder, so that frames are encoded outside sendMu
	written atomic.Pointer[func(v1.Message)] // OnRingWrite's

	readMu  sync.Mutex    // held by the caller reading the completion ring
	baton   chan struct{} // passes the reading to a waiting caller
	waiting atomic.Int32  // callers waiting for replies, the reader included

	closeOnce sync.Once
}

// UseRings moves the client's requests onto rings in mem, laid out by
// InitRings: every request from now on goes on the submission ring and
// replies come on the completion ring (those with descriptors still come on
// the socket, which also stays the connection's life: its end fails every
// call). Call it when no call is in progress, right after the call that set
// the rings up. release runs once the client has stopped and nothing touches
// mem any more.
func (cl *Client) UseRings(mem []byte, submit, complete int, opts ring.Options, release func()) error {
	sqMem, cqMem, err := splitRings(mem, submit, complete)
	if err != nil {
		return err
	}
	r := &clientRings{release: release, baton: make(chan struct{}, 1)}
	r.encs.New = func() any { return new(v1.Encoder) }
	cqOpts := opts
	cqOpts.OnFull = nil
	if r.cq, err = ring.NewConsumer(cqMem, complete, ringMessage, cqOpts); err != nil {
		return fmt.Errorf("attach completion ring: %w", err)
	}
	// A full submission ring may be the driver waiting for room on the
	// completion ring: drain replies while waiting.
	opts.OnFull = func() { cl.drainReplies(r) }
	if r.sq, err = ring.NewProducer(sqMem, submit, ringMessage, opts); err != nil {
		r.cq.Close()
		return fmt.Errorf("attach submission ring: %w", err)
	}
	cl.mu.Lock()
	if cl.err != nil || cl.rings.Load() != nil {
		err := cl.err
		cl.mu.Unlock()
		r.close()
		if err == nil {
			err = ErrRingsInUse
		}
		return err
	}
	cl.rings.Store(r)
	cl.mu.Unlock()
	return nil
}

// OnRingWrite has fn called with each request written on the submission
// ring from now on, under the lock that orders the writes, so that fn sees
// them in the order the driver reads them (a client that watches its
// launches counts them so: api/v1 WatchLaunches). fn must be quick and must
// not send; nil stops the calls. False if the client is not on rings.
func (cl *Client) OnRingWrite(fn func(v1.Message)) bool {
	r := cl.rings.Load()
	if r == nil {
		return false
	}
	if fn == nil {
		r.written.Store(nil)
	} else {
		r.written.Store(&fn)
	}
	return true
}

// OnRings reports whether the client's requests go on rings.
func (cl *Client) OnRings() bool { return cl.rings.Load() != nil }

// closeRings closes the rings (waking callers waiting on them) and releases
// their memory. The reader calls it when it stops.
func (cl *Client) closeRings() {
	cl.mu.Lock() // orders this after any UseRings that saw no error
	r := cl.rings.Load()
	cl.mu.Unlock()
	if r != nil {
		r.close()
	}
}

func (r *clientRings) close() {
	r.closeOnce.Do(func() {
		r.sq.Close()
		r.cq.Close()
		if r.release != nil {
			r.release()
		}
	})
}

// write sends one request frame on the rings or the socket.
func (cl *Client) write(id uint64, flags v1.Flags, req v1.Message, fds []int) error {
	r := cl.rings.Load()
	if r == nil {
		return cl.conn.WriteMessage(id, flags, req, fds...)
	}
	if len(fds) > 0 {
		return fmt.Errorf("write %v: %w", req.Type(), ErrFDsOnRings)
	}
	enc := r.encs.Get().(*v1.Encoder)
	enc.Reset()
	defer func() {
		if cap(enc.Bytes()) <= keepWriteBuf {
			r.encs.Put(enc)
		}
	}()
	if err := enc.PutFrame(id, flags, req); err != nil {
		return fmt.Errorf("write %v: %w", req.Type(), err)
	}
	r.sendMu.Lock()
	err := r.sq.Write(enc.Bytes())
	if fn := r.written.Load(); fn != nil && err == nil {
		(*fn)(req)
	}
	r.sendMu.Unlock()
	if err != nil {
		if errors.Is(err, ring.ErrCorrupt) {
			cl.fail(err)
		}
		if e := cl.Err(); e != nil {
			return e
		}
		return fmt.Errorf("write %v: %w", req.Type(), err)
	}
	return nil
}

// fail stops the client for a protocol violation by the peer.
func (cl *Client) fail(err error) {
	cl.stop(err)
	cl.conn.Close() // the reader stops, and closes the rings
}

// await waits for the reply to request id, which the reader (socket) or a
// caller reading the completion ring routes to ch. On error the request is
// forgotten.
func (cl *Client) await(ctx context.Context, req v1.Message, id uint64, ch chan Frame) (Frame, error) {
	if r := cl.rings.Load(); r != nil {
		f, err := cl.awaitRing(ctx, r, req, ch)
		if err != nil {
			cl.forget(id)
		}
		return f, err
	}
	select {
	case f := <-ch:
		return f, nil
	case <-ctx.Done():
		cl.forget(id)
		return Frame{}, timeoutErr(req, ctx)
	case <-cl.done:
		// The reply may have been routed just before the reader stopped.
		select {
		case f := <-ch:
			return f, nil
		default:
			return Frame{}, cl.Err()
		}
	}
}

func timeoutErr(req v1.Message, ctx context.Context) error {
	return fmt.Errorf("call %v: %w: %w", req.Type(), v1.ErrTimeout, ctx.Err())
}

func (cl *Client) awaitRing(ctx context.Context, r *clientRings, req v1.Message, ch chan Frame) (Frame, error) {
	r.waiting.Add(1)
	defer r.waiting.Add(-1)
	for {
		select {
		case f := <-ch:
			return f, nil
		default:
		}
		if r.readMu.TryLock() {
			err := cl.pump(ctx, r, req, ch)
			r.readMu.Unlock()
			r.pass()
			if err != nil {
				select { // routed just before the error
				case f := <-ch:
					return f, nil
				default:
				}
				return Frame{}, err
			}
			continue
		}
		select {
		case f := <-ch:
			return f, nil
		case <-r.baton:
		case <-ctx.Done():
			return Frame{}, timeoutErr(req, ctx)
		case <-cl.done:
			select {
			case f := <-ch:
				return f, nil
			default:
				return Frame{}, cl.Err()
			}
		}
	}
}

// pass hands the reading of the completion ring to another waiting caller.
func (r *clientRings) pass() {
	if r.waiting.Load() > 1 {
		select {
		case r.baton <- struct{}{}:
		default:
		}
	}
}

// pump reads the completion ring, routing every reply, until ch has one.
// The caller holds readMu.
func (cl *Client) pump(ctx context.Context, r *clientRings, req v1.Message, ch chan Frame) error {
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, r.cq.Interrupt)
		defer stop()
	}
	for {
		if len(ch) > 0 {
			return nil
		}
		if ctx.Err() != nil {
			return timeoutErr(req, ctx)
		}
		msg, err := r.cq.Read(nil)
		if errors.Is(err, ring.ErrInterrupted) {
			continue
		}
		if err != nil {
			if errors.Is(err, ring.ErrCorrupt) {
				cl.fail(fmt.Errorf("read reply: %w", err))
			}
			if e := cl.Err(); e != nil {
				return e
			}
			return fmt.Errorf("read reply: %w", err)
		}
		if err := cl.routeRing(msg); err != nil {
			return err
		}
	}
}

// routeRing checks a reply read off the completion ring and routes it.
func (cl *Client) routeRing(msg []byte) error {
	f, err := frameFromRing(msg)
	if err == nil {
		if _, err = v1.CheckHeader(f.Header); err == nil && !f.Header.IsReply() {
			err = v1.Errorf(v1.CodeMalformed, "server sent a %v request", f.Header.Type)
		}
	}
	if err != nil {
		err = fmt.Errorf("read reply: %w", err)
		cl.fail(err)
		return err
	}
	cl.route(f)
	return nil
}

// drainReplies routes the replies already on the completion ring, if no
// caller is reading it.
func (cl *Client) drainReplies(r *clientRings) {
	if !r.readMu.TryLock() {
		return
	}
	for {
		msg, ok, err := r.cq.TryRead(nil)
		if err != nil || !ok || cl.routeRing(msg) != nil {
			break
		}
	}
	r.readMu.Unlock()
	r.pass()
}

// Answered reports whether Wait got the peer's reply (success or error), as
// opposed to giving up (its context ended, the connection broke): only then
// is it known whether the request was carried out.
func (c *Call) Answered() bool { return c.answered }

// Call is a request in flight, from Start.
type Call struct {
	cl       *Client
	req      v1.Message
	want     v1.Type
	id       uint64
	ch       chan Frame
	answered bool
}

// Start sends req and returns without waiting for its reply: Wait collects
// it. A goroutine keeps several requests in flight this way (a pipelined bulk
// copy does). Every Call must be waited for.
func (cl *Client) Start(ctx context.Context, req v1.Message) (*Call, error) {
	want := v1.ReplyType(req)
	if want == 0 {
		return nil, fmt.Errorf("call %v: %w", req.Type(), v1.Errorf(v1.CodeInvalidArgument, "%v is not a request", req.Type()))
	}
	if err := ctx.Err(); err != nil {
		return nil, timeoutErr(req, ctx)
	}
	c := &Call{cl: cl, req: req, want: want, id: cl.next.Add(1), ch: make(chan Frame, 1)}
	cl.mu.Lock()
	if cl.err != nil {
		cl.mu.Unlock()
		return nil, cl.err
	}
	cl.pending[c.id] = c.ch
	cl.mu.Unlock()
	if err := cl.write(c.id, 0, req, nil); err != nil {
		cl.forget(c.id)
		return nil, cl.writeErr(err)
	}
	return c, nil
}

// Wait waits for the call's reply and decodes it into reply (nil to discard
// it), as Call does.
func (c *Call) Wait(ctx context.Context, reply v1.Message) error {
	if reply != nil && reply.Type() != c.want {
		c.cl.forget(c.id)
		return fmt.Errorf("call %v: %w", c.req.Type(), v1.Errorf(v1.CodeInvalidArgument, "reply is %v, want %v", reply.Type(), c.want))
	}
	f, err := c.cl.await(ctx, c.req, c.id, c.ch)
	if err != nil {
		return err
	}
	c.answered = true
	fds, err := c.cl.finish(c.req, f, c.want, reply)
	closeFDs(fds)
	return err
}
