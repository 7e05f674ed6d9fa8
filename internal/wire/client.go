package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Client sends requests on a Conn and routes the replies back to their callers.
// It assigns request IDs, and one goroutine reads every reply. Any number of
// goroutines may call it at once; requests go out in the order their calls
// reach the connection, which is the order the server handles them in.
type Client struct {
	conn *Conn
	next atomic.Uint64

	mu      sync.Mutex // guards pending and err
	pending map[uint64]chan Frame
	err     error // why the client stopped; set once

	done chan struct{} // closed when the reader has stopped

	rings atomic.Pointer[clientRings] // set once the session moved to rings (ringclient.go)
}

// NewClient starts a client on c, which it owns from now on.
func NewClient(c *Conn) *Client {
	cl := &Client{conn: c, pending: make(map[uint64]chan Frame), done: make(chan struct{})}
	go cl.read()
	return cl
}

// Conn returns the client's connection (for PeerCred or deadlines).
func (cl *Client) Conn() *Conn { return cl.conn }

// Call sends req and waits for its reply, which it decodes into reply. reply
// must be of v1.ReplyType(req), or nil to accept that reply and discard it.
// An error reply is returned as its *v1.Error. Descriptors that come with the
// reply are closed: use CallFDs to receive them. Byte slices in reply alias a
// buffer that belongs to the reply alone.
func (cl *Client) Call(ctx context.Context, req, reply v1.Message) error {
	fds, err := cl.CallFDs(ctx, req, reply, nil)
	closeFDs(fds)
	return err
}

// CallFDs is Call with descriptors: fds go with the request (they stay the
// caller's) and the reply's descriptors are returned, the caller's to close.
//
// If ctx ends first, CallFDs returns an error matching both ctx.Err() and
// v1.ErrTimeout; the request may still be carried out, and its reply is
// dropped when it comes. If the connection ends, the error matches ErrConnLost
// (v1.ErrDeviceLost), or ErrClosed after Close.
func (cl *Client) CallFDs(ctx context.Context, req, reply v1.Message, fds []int) ([]int, error) {
	want := v1.ReplyType(req)
	if want == 0 {
		return nil, fmt.Errorf("call %v: %w", req.Type(), v1.Errorf(v1.CodeInvalidArgument, "%v is not a request", req.Type()))
	}
	if reply != nil && reply.Type() != want {
		return nil, fmt.Errorf("call %v: %w", req.Type(), v1.Errorf(v1.CodeInvalidArgument, "reply is %v, want %v", reply.Type(), want))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("call %v: %w: %w", req.Type(), v1.ErrTimeout, err)
	}
	id := cl.next.Add(1)
	ch := make(chan Frame, 1)
	cl.mu.Lock()
	if cl.err != nil {
		cl.mu.Unlock()
		return nil, cl.err
	}
	cl.pending[id] = ch
	cl.mu.Unlock()

	if err := cl.write(id, 0, req, fds); err != nil {
		cl.forget(id)
		return nil, cl.writeErr(err)
	}
	f, err := cl.await(ctx, req, id, ch)
	if err != nil {
		return nil, err
	}
	return cl.finish(req, f, want, reply)
}

// Send sends req asynchronously (v1.FlagNoReply): no reply comes, and an error
// it causes is returned by the session's next synchronizing call. Only
// requests the table marks Async may be sent so (and a Memcpy only HtoD or
// DtoD); others are refused here as Malformed.
func (cl *Client) Send(req v1.Message, fds ...int) error {
	if err := cl.Err(); err != nil {
		return err
	}
	if err := cl.write(cl.next.Add(1), v1.FlagNoReply, req, fds); err != nil {
		return cl.writeErr(err)
	}
	return nil
}

// Close closes the connection, fails calls in progress with ErrClosed and waits
// for the reader to stop.
func (cl *Client) Close() error {
	cl.stop(ErrClosed)
	err := cl.conn.Close()
	<-cl.done
	return err
}

// Done is closed when the client has stopped: after Close, or when the
// connection failed. Err then says why.
func (cl *Client) Done() <-chan struct{} { return cl.done }

// Err returns why the client stopped, or nil while it runs.
func (cl *Client) Err() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.err
}

func (cl *Client) stop(err error) {
	cl.mu.Lock()
	if cl.err == nil {
		cl.err = err
	}
	cl.mu.Unlock()
}

// writeErr classifies a write failure: an encoding refusal is the caller's
// (a typed v1 error already); anything else means the connection is gone.
// A socket the peer closed stops the client at once, as its reader would
// once it saw the end: until then another caller (the manager, retrying an
// AttachSession on a driver that just died) would take the connection for
// a live one.
func (cl *Client) writeErr(err error) error {
	if e := cl.Err(); e != nil {
		return e
	}
	if errors.Is(err, ErrConnLost) { // the Conn met the peer's end (EPIPE, ECONNRESET)
		cl.fail(err)
		return err
	}
	var ve *v1.Error
	if errors.As(err, &ve) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrConnLost, err)
}

func (cl *Client) forget(id uint64) {
	cl.mu.Lock()
	ch := cl.pending[id]
	delete(cl.pending, id)
	cl.mu.Unlock()
	if ch != nil {
		select {
		case f := <-ch: // routed just now: release its descriptors
			f.CloseFDs()
		default:
		}
	}
}

func (cl *Client) finish(req v1.Message, f Frame, want v1.Type, reply v1.Message) ([]int, error) {
	if f.Header.IsError() {
		f.CloseFDs()
		e := new(v1.Error)
		if err := v1.Unmarshal(f.Payload, e); err != nil {
			return nil, fmt.Errorf("call %v: error reply: %w", req.Type(), err)
		}
		return nil, e
	}
	if f.Header.Type != want {
		f.CloseFDs()
		return nil, fmt.Errorf("call %v: %w", req.Type(), v1.Errorf(v1.CodeMalformed, "reply is %v, want %v", f.Header.Type, want))
	}
	if reply == nil {
		info, _ := v1.Lookup(want)
		reply = info.New()
	}
	if err := v1.Unmarshal(f.Payload, reply); err != nil {
		f.CloseFDs()
		return nil, fmt.Errorf("call %v: reply: %w", req.Type(), err)
	}
	return f.FDs, nil
}

// read routes replies to their callers until the connection fails.
func (cl *Client) read() {
	defer close(cl.done)
	for {
		f, err := cl.conn.ReadFrame()
		if err == nil {
			if _, err = v1.CheckHeader(f.Header); err == nil && !f.Header.IsReply() {
				err = v1.Errorf(v1.CodeMalformed, "server sent a %v request", f.Header.Type)
			}
			if err != nil {
				f.CloseFDs()
				err = fmt.Errorf("read reply: %w", err)
			}
		}
		if err != nil {
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
				err = fmt.Errorf("%w: %w", ErrConnLost, err)
			}
			cl.stop(err)
			cl.conn.Close()
			cl.closeRings()
			return
		}
		cl.route(f)
		if r := cl.rings.Load(); r != nil {
			r.cq.Interrupt() // a caller reading the completion ring looks for this reply
		}
	}
}

// route hands a reply to the caller waiting for it.
func (cl *Client) route(f Frame) {
	cl.mu.Lock()
	ch := cl.pending[f.Header.ID]
	delete(cl.pending, f.Header.ID)
	cl.mu.Unlock()
	if ch == nil {
		f.CloseFDs() // the caller gave up
		return
	}
	ch <- f
}
