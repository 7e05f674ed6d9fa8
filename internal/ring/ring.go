package ring

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Ring geometry. The control page's words sit on separate 128-byte lines so
// that the producer's and the consumer's writes never share a cache line
// (adjacent-line prefetch pairs 64-byte lines).
const (
	// ControlBytes is the size of a ring's (and a staging area's) control page.
	ControlBytes = 4096
	// MinSize and MaxSize bound a ring's data area, a power of two.
	MinSize = 4096
	MaxSize = 1 << 30

	offMagic    = 0
	offVersion  = 4
	offSize     = 8
	offHead     = 128 // u64, written by the producer
	offConsWait = 256 // u32 futex word: the consumer may be asleep
	offTail     = 384 // u64, written by the consumer
	offProdWait = 512 // u32 futex word: the producer may be asleep

	ringMagic   = 0x47525047 // "GPRG"
	ringVersion = 1

	// maxShm bounds one shared memory object (64 GiB): a wild size is an
	// error, not an attempt.
	maxShm = 64 << 30

	recHdr   = 8 // u32 length | u32 flags
	flagPad  = 1 // skip to the end of the data area
	flagMore = 2 // the message continues in the next record
)

// Bytes returns the shared memory a ring of size data bytes takes: its
// control page and its data area.
func Bytes(size int) int { return ControlBytes + size }

// MaxRecord returns the longest record of a ring of size data bytes: longer
// messages are split into records of this size. A quarter of the ring lets the
// producer write one record while the consumer copies out another, and
// guarantees that a record and a pad before it always fit once the ring drains.
func MaxRecord(size int) int { return size / 4 }

func checkLayout(mem []byte, size int) error {
	if size < MinSize || size > MaxSize || bits.OnesCount(uint(size)) != 1 {
		return fmt.Errorf("%w: ring size %d is not a power of two in [%d, %d]", ErrLayout, size, MinSize, MaxSize)
	}
	if len(mem) < Bytes(size) {
		return fmt.Errorf("%w: %d bytes of memory for a ring of %d", ErrLayout, len(mem), size)
	}
	return nil
}

// Init lays out an empty ring of size data bytes at the start of mem. Only the
// side that creates the memory calls it, before either end attaches.
func Init(mem []byte, size int) error {
	if err := checkLayout(mem, size); err != nil {
		return err
	}
	clear(mem[:ControlBytes])
	binary.LittleEndian.PutUint32(mem[offMagic:], ringMagic)
	binary.LittleEndian.PutUint32(mem[offVersion:], ringVersion)
	binary.LittleEndian.PutUint64(mem[offSize:], uint64(size))
	return nil
}

// view is what both ends know of a ring, fixed when they attach: nothing here
// is read back from shared memory.
type view struct {
	data               []byte
	size, mask         uint64
	frag               int // MaxRecord
	maxMsg             int
	head, tail         *atomic.Uint64
	consWait, prodWait *atomic.Uint32
}

func attach(mem []byte, size, maxMsg int) (view, error) {
	if err := checkLayout(mem, size); err != nil {
		return view{}, err
	}
	if maxMsg < 0 {
		return view{}, fmt.Errorf("%w: message limit %d", ErrLayout, maxMsg)
	}
	le := binary.LittleEndian
	if m, v, s := le.Uint32(mem[offMagic:]), le.Uint32(mem[offVersion:]), le.Uint64(mem[offSize:]); m != ringMagic || v != ringVersion || s != uint64(size) {
		return view{}, fmt.Errorf("%w: control page says magic %#x version %d size %d, want %#x %d %d",
			ErrLayout, m, v, s, uint32(ringMagic), ringVersion, size)
	}
	return view{
		data: mem[ControlBytes : ControlBytes+size : ControlBytes+size],
		size: uint64(size), mask: uint64(size - 1), frag: MaxRecord(size), maxMsg: maxMsg,
		head: word64(mem, offHead), tail: word64(mem, offTail),
		consWait: word32(mem, offConsWait), prodWait: word32(mem, offProdWait),
	}, nil
}

// consistent reports whether a head and tail could have come from honest ends:
// aligned, and no more than the ring apart.
func (v *view) consistent(head, tail uint64) bool {
	return head-tail <= v.size && head%recHdr == 0 && tail%recHdr == 0
}

func align8(n int) int { return (n + 7) &^ 7 }

// ---- Producer ------------------------------------------------------------------

// Producer writes messages into a ring. One goroutine writes at a time.
type Producer struct {
	ops    sync.RWMutex // shared by Write, exclusive by Close
	closed atomic.Bool
	v      view
	opts   Options
	head   uint64 // private: what this end has published
	err    error  // sticky: the ring is corrupt
}

// NewProducer attaches the producing end to the ring of size data bytes at the
// start of mem, for messages of at most maxMsg bytes (the consumer's limit).
func NewProducer(mem []byte, size, maxMsg int, opts Options) (*Producer, error) {
	v, err := attach(mem, size, maxMsg)
	if err != nil {
		return nil, err
	}
	head, tail := v.head.Load(), v.tail.Load()
	if !v.consistent(head, tail) {
		return nil, fmt.Errorf("attach producer: %w: head %d tail %d", ErrCorrupt, head, tail)
	}
	return &Producer{v: v, opts: opts.withDefaults(), head: head}, nil
}

// Write copies msg into the ring as one message, waiting while the ring is
// full. It returns ErrTooLarge for a message over the limit, ErrClosed once
// the end is closed, and ErrCorrupt (for good) if the consumer's position is
// impossible.
func (p *Producer) Write(msg []byte) error {
	if len(msg) > p.v.maxMsg {
		return fmt.Errorf("write %d-byte message, limit %d: %w", len(msg), p.v.maxMsg, ErrTooLarge)
	}
	p.ops.RLock()
	defer p.ops.RUnlock()
	if p.err != nil {
		return p.err
	}
	for {
		if p.closed.Load() {
			return ErrClosed
		}
		n := min(len(msg), p.v.frag)
		var flags uint32
		if n < len(msg) {
			flags = flagMore
		}
		if err := p.put(msg[:n], flags); err != nil {
			return err
		}
		msg = msg[n:]
		if len(msg) == 0 {
			return nil
		}
	}
}

// put writes one record, with a pad record before it if it would wrap, and
// publishes both at once.
func (p *Producer) put(rec []byte, flags uint32) error {
	v := &p.v
	need := uint64(recHdr + align8(len(rec)))
	off := p.head & v.mask
	var pad uint64
	if off+need > v.size {
		pad = v.size - off
	}
	if err := p.reserve(pad + need); err != nil {
		return err
	}
	le := binary.LittleEndian
	if pad > 0 {
		le.PutUint32(v.data[off:], 0)
		le.PutUint32(v.data[off+4:], flagPad)
		off = 0
	}
	le.PutUint32(v.data[off:], uint32(len(rec)))
	le.PutUint32(v.data[off+4:], flags)
	copy(v.data[off+recHdr:], rec)
	p.head += pad + need
	v.head.Store(p.head)
	ringBell(v.consWait)
	return nil
}

// reserve waits until total bytes are free.
func (p *Producer) reserve(total uint64) error {
	v := &p.v
	bad := false
	room := func() bool {
		t := v.tail.Load()
		if !v.consistent(p.head, t) {
			bad = true
			return true
		}
		return v.size-(p.head-t) >= total
	}
	var idle func()
	if p.opts.OnFull != nil {
		idle = p.opts.OnFull
	}
	if err := waitUntil(v.prodWait, &p.opts, true, room, p.stopped, idle); err != nil {
		return err
	}
	if bad {
		p.err = fmt.Errorf("write: %w: consumer position %d with %d published", ErrCorrupt, v.tail.Load(), p.head)
		return p.err
	}
	return nil
}

func (p *Producer) stopped() error {
	if p.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Close fails writes from now on, wakes a writer waiting for room, and returns
// once no write touches the memory.
func (p *Producer) Close() {
	if !p.closed.Swap(true) {
		wakeAll(p.v.prodWait)
	}
	p.ops.Lock()
	p.ops.Unlock()
}

// ---- Consumer ------------------------------------------------------------------

// Consumer reads messages from a ring. One goroutine reads at a time; Close,
// Shutdown and Interrupt may come from any goroutine.
type Consumer struct {
	ops    sync.RWMutex // shared by reads, exclusive by Close
	closed atomic.Bool
	intr   atomic.Bool
	shut   atomic.Pointer[shutdown]
	v      view
	opts   Options
	tail   uint64 // private: what this end has released
	err    error  // sticky: the ring is corrupt
	part   []byte // a message TryRead left half read
	inPart bool
}

type shutdown struct {
	err  error
	head uint64 // read up to here, then fail with err
}

// NewConsumer attaches the consuming end to the ring of size data bytes at the
// start of mem, accepting messages of at most maxMsg bytes.
func NewConsumer(mem []byte, size, maxMsg int, opts Options) (*Consumer, error) {
	v, err := attach(mem, size, maxMsg)
	if err != nil {
		return nil, err
	}
	head, tail := v.head.Load(), v.tail.Load()
	if !v.consistent(head, tail) {
		return nil, fmt.Errorf("attach consumer: %w: head %d tail %d", ErrCorrupt, head, tail)
	}
	return &Consumer{v: v, opts: opts.withDefaults(), tail: tail}, nil
}

// Read waits for the next message and appends it to buf[:0], returning the
// result (a new slice if buf is too small). It returns ErrClosed once the end
// is closed, the Shutdown error once the ring is drained, ErrInterrupted if
// Interrupt was called while it waited between messages, and ErrCorrupt (for
// good) for anything an honest producer cannot have written.
func (c *Consumer) Read(buf []byte) ([]byte, error) {
	msg, _, err := c.read(buf, true)
	return msg, err
}

// TryRead is Read without waiting: ok is false if no whole message is there
// yet (a part already there is kept for the next read).
func (c *Consumer) TryRead(buf []byte) (msg []byte, ok bool, err error) {
	return c.read(buf, false)
}

func (c *Consumer) read(buf []byte, block bool) ([]byte, bool, error) {
	c.ops.RLock()
	defer c.ops.RUnlock()
	if c.closed.Load() {
		return nil, false, ErrClosed
	}
	if c.err != nil {
		return nil, false, c.err
	}
	v := &c.v
	msg := buf[:0]
	if c.inPart {
		msg = c.part
	}
	for {
		head, err := c.published(block)
		if err != nil || head == c.tail {
			if err == nil { // nothing yet, and asked not to wait
				if c.inPart {
					// Keep the part privately: the caller may reuse buf.
					c.part = append([]byte(nil), msg...)
				}
				return nil, false, nil
			}
			c.part, c.inPart = nil, false
			return nil, false, err
		}
		avail := head - c.tail
		off := c.tail & v.mask
		// Read the header once: the peer may change it under us.
		n := binary.LittleEndian.Uint32(v.data[off:])
		flags := binary.LittleEndian.Uint32(v.data[off+4:])
		if flags == flagPad {
			skip := v.size - off
			if n != 0 || off == 0 || skip > avail {
				return nil, false, c.corrupt("pad record of %d at offset %d with %d published", n, off, avail)
			}
			c.release(skip)
			continue
		}
		need := uint64(recHdr + align8(int(n)))
		switch {
		case flags&^flagMore != 0:
			return nil, false, c.corrupt("record flags %#x", flags)
		case n > uint32(v.frag), flags&flagMore != 0 && n != uint32(v.frag):
			return nil, false, c.corrupt("record of %d bytes (flags %#x), records are up to %d", n, flags, v.frag)
		case off+need > v.size || need > avail:
			return nil, false, c.corrupt("record of %d bytes at offset %d with %d published", n, off, avail)
		case len(msg)+int(n) > v.maxMsg:
			return nil, false, c.corrupt("message over the %d-byte limit", v.maxMsg)
		}
		msg = append(msg, v.data[off+recHdr:off+recHdr+uint64(n)]...)
		c.release(need)
		if flags&flagMore == 0 {
			c.part, c.inPart = nil, false
			return msg, true, nil
		}
		c.inPart = true
	}
}

// Pending reports whether the producer has published bytes this end has not
// read yet: another message (or part of one) is waiting. It is a hint, read
// without checks: Read and TryRead are what validate the ring.
func (c *Consumer) Pending() bool {
	c.ops.RLock()
	defer c.ops.RUnlock()
	if c.closed.Load() {
		return false
	}
	if sd := c.shut.Load(); sd != nil {
		return sd.head != c.tail
	}
	return c.v.head.Load() != c.tail
}

// Peek copies into p the first bytes of the next message, without reading
// it, and returns how many it copied: 0 if no message is published whole
// enough to tell (its first record, whole), or a part of one was already
// read. Like Pending it is a hint, read without checks beyond its own
// bounds; Read and TryRead are what validate the ring. The reading
// goroutine calls it.
func (c *Consumer) Peek(p []byte) int {
	c.ops.RLock()
	defer c.ops.RUnlock()
	if c.closed.Load() || c.err != nil || c.inPart || c.shut.Load() != nil {
		return 0
	}
	v := &c.v
	head, tail := v.head.Load(), c.tail
	for range 2 { // a pad record, then the message's first record
		if head == tail || !v.consistent(head, tail) {
			return 0
		}
		off := tail & v.mask
		n := uint64(binary.LittleEndian.Uint32(v.data[off:]))
		flags := binary.LittleEndian.Uint32(v.data[off+4:])
		if flags == flagPad {
			tail += v.size - off
			continue
		}
		if flags&^flagMore != 0 || n > uint64(v.frag) || recHdr+uint64(align8(int(n))) > head-tail || off+recHdr+n > v.size {
			return 0
		}
		return copy(p, v.data[off+recHdr:off+recHdr+n])
	}
	return 0
}

// Watch polls, without reading, until a read would not wait (a message or
// part of one is published and unread, or the end is shut down or closed)
// and has not for stale (0: at once), and reports true; false once spin has
// passed or quit reports true. Unlike the reads, it may run on any goroutine
// while another reads: a reader that the system does not run for a while (a
// virtual CPU taken away by the hypervisor) can then be stood in for, by a
// watcher that waits for stale first so as not to race a reader that is
// there. It polls as a waiting reader does, giving up the CPU now and then
// to any thread waiting for it.
func (c *Consumer) Watch(spin, stale time.Duration, quit func() bool) bool {
	c.ops.RLock()
	defer c.ops.RUnlock()
	start := time.Now()
	var since time.Time // when the unread data at tail was first seen
	var tail uint64
	for i := 1; ; i++ {
		if c.closed.Load() || c.shut.Load() != nil {
			return true
		}
		if t := c.v.tail.Load(); c.v.head.Load() != t {
			if stale <= 0 {
				return true
			}
			if since.IsZero() || t != tail {
				since, tail = time.Now(), t
			} else if time.Since(since) >= stale {
				return true
			}
		} else {
			since = time.Time{}
		}
		if i&63 == 0 {
			if quit() || time.Since(start) >= spin {
				return false
			}
			c.opts.Yield()
		}
	}
}

// published returns the producer's head once it is past the tail, or the
// tail itself when block is false and nothing is there.
func (c *Consumer) published(block bool) (uint64, error) {
	v := &c.v
	var head uint64
	var sd *shutdown
	bad := false
	ready := func() bool {
		if sd = c.shut.Load(); sd != nil {
			head = sd.head
		} else {
			head = v.head.Load()
		}
		if !v.consistent(head, c.tail) {
			bad = true
			return true
		}
		return head != c.tail || sd != nil
	}
	if block {
		if err := waitUntil(v.consWait, &c.opts, true, ready, c.stopped, c.opts.OnEmpty); err != nil {
			return 0, err
		}
	} else if !ready() {
		return c.tail, nil
	}
	switch {
	case bad:
		return 0, c.corrupt("producer position %d with %d released", head, c.tail)
	case head == c.tail: // shut down and drained
		return 0, sd.err
	}
	return head, nil
}

func (c *Consumer) stopped() error {
	if c.closed.Load() {
		return ErrClosed
	}
	if !c.inPart && c.intr.Swap(false) {
		return ErrInterrupted
	}
	return nil
}

func (c *Consumer) release(n uint64) {
	c.tail += n
	c.v.tail.Store(c.tail)
	ringBell(c.v.prodWait)
}

func (c *Consumer) corrupt(format string, args ...any) error {
	c.err = fmt.Errorf("read: %w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	c.part, c.inPart = nil, false
	return c.err
}

// Shutdown makes reads return what the producer has published so far and then
// err: the peer has gone, and what it sent before going is still served. A
// message it left unfinished is dropped.
func (c *Consumer) Shutdown(err error) {
	c.ops.RLock()
	defer c.ops.RUnlock()
	if c.closed.Load() || c.shut.Load() != nil {
		return
	}
	c.shut.Store(&shutdown{err: err, head: c.v.head.Load()})
	wakeAll(c.v.consWait)
}

// Interrupt makes a Read that is waiting between messages (or the next one to
// wait) return ErrInterrupted, so its caller can look at something else.
func (c *Consumer) Interrupt() {
	c.ops.RLock()
	defer c.ops.RUnlock()
	if c.closed.Load() {
		return
	}
	c.intr.Store(true)
	wakeAll(c.v.consWait)
}

// Close fails reads from now on, wakes a waiting reader, and returns once no
// read touches the memory.
func (c *Consumer) Close() {
	if !c.closed.Swap(true) {
		wakeAll(c.v.consWait)
	}
	c.ops.Lock()
	c.ops.Unlock()
}
