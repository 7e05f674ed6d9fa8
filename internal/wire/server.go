package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Request is one admitted, decoded request handed to a Handler.
type Request struct {
	Header v1.Header
	Msg    v1.Message
	// FDs came with the request; the handler owns them.
	FDs []int
	// More: another request already waited on the transport behind this one
	// when it was read (a burst): a handler may leave work that a later
	// request of the burst will push on. Only rings report it.
	More bool
	// Hedged: the hedge's helper served it, standing in for Serve's own
	// goroutine (Server.Hedge), so it was handled on another thread than
	// the requests around it. A diagnostic.
	Hedged bool
	// next is the transport's NextType, when it has one.
	next interface{ NextType() (v1.Type, bool) }
}

// NextType returns the type of the request waiting behind this one, if the
// transport can tell (rings): a handler may prepare for it (a launch with a
// synchronize behind it fences its stream at once). It looks when called,
// on the serving goroutine, so only the handlers that ask pay for it.
func (r *Request) NextType() (v1.Type, bool) {
	if r.next == nil {
		return 0, false
	}
	return r.next.NextType()
}

// Handler answers one request with its reply (nil for Empty) and descriptors to
// send with it, or an error that goes back as an Error reply. Serve closes the
// returned descriptors once they are sent (or if they cannot be). The Request
// is the handler's only for the call: Serve reuses it for the next one.
type Handler func(ctx context.Context, req *Request) (reply v1.Message, fds []int, err error)

// Server serves the requests of one endpoint on connections.
type Server struct {
	// Endpoint is what this server is: requests of other endpoints are refused
	// with PermissionDenied.
	Endpoint v1.Endpoint
	// Rights returns the session's rights now; it is asked for every request, so
	// a Restrict takes effect from the next one. Nil means AllSessionRights
	// (the manager and control endpoints have no session rights).
	Rights func() v1.Rights
	// Handle answers requests, one at a time, in the order they arrived.
	Handle Handler
	// Deferred receives the error of a NoReply request (refused or failed), for
	// the session to return from its next synchronizing call; req.Msg is nil if
	// the request was refused before it was decoded. Nil drops such errors.
	Deferred func(req *Request, err error)
	// Reuse, if set, names request types whose decoded message the handler
	// and Deferred keep nothing of past their call (neither the message nor
	// what it points into): Serve decodes such a request into the message it decoded the
	// previous one of the same type into, sparing an allocation per request
	// in a burst of them (launches). The type's Decode must set every field.
	Reuse func(v1.Type) bool
	// Hedge, if set, is asked once the connection has moved onto
	// shared-memory rings (HotConn): a positive duration d starts a second
	// goroutine that watches the submission ring beside Serve's own and
	// serves a request that has waited unread for a few µs while Serve's
	// goroutine was neither reading nor serving (one at a time, in order:
	// they pass the serving state between them). It watches for d after
	// the latest request before it parks, and only on demand unless
	// HedgeAlways is set. On a virtual machine whose CPUs the
	// hypervisor takes away now and then (for up to milliseconds, unseen by
	// the guest), a request then waits long only if both are away. It costs
	// a second polling CPU while it watches; for latency-critical sessions.
	Hedge func() time.Duration
	// HedgeDelay is how long a request waits unread before the helper
	// stands in (0: DefaultHedgeDelay).
	HedgeDelay time.Duration
	// HedgeAlways makes the helper watch whenever requests come; unset, it
	// watches on demand: for a while after Serve's goroutine was seen away
	// from its CPU (hedge.go says why).
	HedgeAlways bool
	// Answered, if set, runs after each request has been answered (or
	// handled, if it takes no answer), on the goroutine serving: work a
	// handler leaves for after its answer runs there, off the client's path.
	Answered func()
}

// Serve reads requests from c (a Conn, or a HotConn that may move onto
// shared-memory rings) and answers them until the peer closes the
// connection (then it returns nil), ctx ends, or the connection breaks. It
// closes c when it returns.
//
// Serve enforces the protocol so that handlers see only admitted, well-formed
// requests: the first frame must be a Hello of the same major version and of
// the role that fits the endpoint (RoleControl on EndpointControl, RoleClient
// elsewhere), else it answers with an error and closes; every request is
// checked by v1.Admit and v1.AdmitMessage; an unknown type gets Unsupported
// and the connection stays up; an oversized or unframeable request gets
// Malformed and the connection is closed. The handler answers Hello too (it
// authenticates the token and fills HelloReply); an error it returns for Hello
// closes the connection.
//
// Requests are handled one at a time: a handler that blocks (WaitFence, say)
// holds up the requests behind it on this connection, as a CUDA stream would.
func (s *Server) Serve(ctx context.Context, c Transport) error {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()

	st := &serving{s: s, ctx: ctx, c: c, req: new(Request), dc: &decoding{}}
	st.pending, _ = c.(interface{ Pending() bool })
	st.next, _ = c.(interface{ NextType() (v1.Type, bool) })
	st.recycler, _ = c.(interface{ Recycle() })
	hc, _ := c.(hedgeable)
	var h *hedge
	asked := s.Hedge == nil || hc == nil // Hedge is asked once, on rings
	defer func() {
		if h != nil {
			h.stop() // before c closes: the helper touches it
		}
	}()
	for {
		if !asked && hc.OnRings() {
			asked = true
			if spin := s.Hedge(); spin > 0 {
				h = startHedge(st, hc, spin, s.HedgeDelay, s.HedgeAlways)
			}
		}
		if h != nil {
			if done, err := h.serveTurn(); done {
				return err
			}
			continue
		}
		if _, done, err := st.step(nil); done {
			return err
		}
	}
}

// serving is the state of Serve that passes from one request to the next:
// only the goroutine serving now touches it (hedge.go).
type serving struct {
	s        *Server
	ctx      context.Context
	c        Transport
	pending  interface{ Pending() bool }
	next     interface{ NextType() (v1.Type, bool) }
	recycler interface{ Recycle() }
	greeted  bool
	byHelper bool // the hedge's helper holds the turn
	req      *Request
	dc       *decoding
}

// step reads one request (waiting for it, or with try, only if one is
// there: ok false if none), serves it and answers. done reports the end of
// the connection, with the error Serve returns.
func (st *serving) step(try hedgeable) (ok, done bool, err error) {
	s, c := st.s, st.c
	var f Frame
	if try != nil {
		f, ok, err = try.TryReadFrame()
		if err == nil && !ok {
			return false, false, nil
		}
	} else {
		f, err = c.ReadFrame()
	}
	if err != nil {
		if st.ctx.Err() != nil {
			return false, true, st.ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			return false, true, nil
		}
		if v1.CodeOf(err) == v1.CodeMalformed && !f.Header.NoReply() {
			// Best effort: tell the peer why before closing.
			_ = c.WriteMessage(f.Header.ID, v1.FlagReply|v1.FlagError, v1.Wire(err))
		}
		if errors.Is(err, net.ErrClosed) {
			return false, true, nil
		}
		return false, true, fmt.Errorf("serve: %w", err)
	}
	req := st.req
	*req = Request{Header: f.Header, FDs: f.FDs, Hedged: st.byHelper}
	if st.pending != nil {
		req.More = st.pending.Pending()
	}
	req.next = st.next
	reply, fds, err := s.serveOne(st.ctx, req, f.Payload, st.greeted, st.dc)
	fatal := !st.greeted && err != nil
	if err == nil && req.Header.Type == v1.TypeHello {
		st.greeted = true
	}
	if werr := s.answer(c, req, reply, fds, err); werr != nil {
		return true, true, fmt.Errorf("serve: %w", werr)
	}
	if st.recycler != nil && s.Reuse != nil && s.Reuse(req.Header.Type) {
		st.recycler.Recycle() // nothing keeps the frame now
	}
	if s.Answered != nil {
		s.Answered()
	}
	if fatal {
		return true, true, fmt.Errorf("serve: handshake: %w", err)
	}
	return true, false, nil
}

// serveOne admits, decodes and handles one request.
// decoding is what Serve keeps from one request to the next: a decoder (one
// made per request would escape to the heap) and the last message of each
// Reuse type (of the first maxSpares seen), so that types that alternate
// (a launch, then its synchronize) each keep theirs.
type decoding struct {
	dec    v1.Decoder
	spares []v1.Message
}

// maxSpares bounds the messages a decoding keeps.
const maxSpares = 4

// spare returns the kept message of type t, or nil.
func (dc *decoding) spare(t v1.Type) v1.Message {
	for _, m := range dc.spares {
		if m.Type() == t {
			return m
		}
	}
	return nil
}

func (s *Server) serveOne(ctx context.Context, req *Request, payload []byte, greeted bool, dc *decoding) (v1.Message, []int, error) {
	h := req.Header
	if !greeted && h.Type != v1.TypeHello {
		closeFDs(req.FDs)
		return nil, nil, v1.Errorf(v1.CodeMalformed, "first request is %v, want Hello", h.Type)
	}
	rights := v1.AllSessionRights
	if s.Rights != nil {
		rights = s.Rights()
	}
	info, err := v1.Admit(s.Endpoint, rights, h)
	if err != nil {
		closeFDs(req.FDs)
		return nil, nil, err
	}
	var m v1.Message
	if s.Reuse != nil && s.Reuse(h.Type) {
		if m = dc.spare(h.Type); m == nil {
			m = info.New()
			if len(dc.spares) < maxSpares {
				dc.spares = append(dc.spares, m)
			}
		}
	} else {
		m = info.New()
	}
	dc.dec.Reset(payload)
	err = dc.dec.Decode(m)
	dc.dec.Reset(nil) // keep no frame
	if err != nil {
		closeFDs(req.FDs)
		return nil, nil, fmt.Errorf("decode %v: %w", h.Type, err)
	}
	if err := v1.AdmitMessage(h, m); err != nil {
		closeFDs(req.FDs)
		return nil, nil, err
	}
	req.Msg = m
	if hello, ok := m.(*v1.Hello); ok {
		if err := hello.Compatible(); err != nil {
			return nil, nil, err
		}
		if want := s.role(); hello.Role != want {
			return nil, nil, v1.Errorf(v1.CodePermissionDenied, "%v endpoint does not serve role %v", s.Endpoint, hello.Role)
		}
		if greeted {
			return nil, nil, v1.Errorf(v1.CodeMalformed, "second Hello on a connection")
		}
	}
	reply, fds, err := s.Handle(ctx, req)
	if err == nil {
		if reply == nil {
			reply = &v1.Empty{}
		}
		if want := v1.ReplyType(m); reply.Type() != want {
			closeFDs(fds)
			return nil, nil, v1.Errorf(v1.CodeInternal, "handler answered %v with %v, want %v", h.Type, reply.Type(), want)
		}
	}
	return reply, fds, err
}

func (s *Server) role() v1.Role {
	if s.Endpoint == v1.EndpointControl {
		return v1.RoleControl
	}
	return v1.RoleClient
}

// answer sends the reply or error for req, or defers the error of a NoReply
// request. Only a write failure is returned.
func (s *Server) answer(c Transport, req *Request, reply v1.Message, fds []int, err error) error {
	defer closeFDs(fds)
	if req.Header.NoReply() {
		if err != nil && s.Deferred != nil {
			s.Deferred(req, err)
		}
		return nil
	}
	if err != nil {
		return c.WriteMessage(req.Header.ID, v1.FlagReply|v1.FlagError, v1.Wire(err))
	}
	if werr := c.WriteMessage(req.Header.ID, v1.FlagReply, reply, fds...); werr != nil {
		var ve *v1.Error
		if errors.As(werr, &ve) {
			// The reply did not encode (too large, wrong descriptor count): a
			// handler bug, reported to the peer rather than dropped.
			return c.WriteMessage(req.Header.ID, v1.FlagReply|v1.FlagError, v1.Errorf(v1.CodeInternal, "%v", werr))
		}
		return werr
	}
	return nil
}
