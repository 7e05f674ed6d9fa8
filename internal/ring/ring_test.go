package ring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const testMax = 1 << 20 // message limit in tests

// twoMappings returns the same fresh shared memory mapped twice, as two
// processes would see it.
func twoMappings(t testing.TB, n int) (a, b *Shm) {
	t.Helper()
	a, err := Create("ring-test", n, true)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(a.FD())
	if err != nil {
		t.Fatal(err)
	}
	b, err = Open(fd, n, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// pair returns a producer and a consumer of one ring of size data bytes, each
// on its own mapping.
func pair(t testing.TB, size int, opts Options) (*Producer, *Consumer) {
	t.Helper()
	a, b := twoMappings(t, Bytes(size))
	if err := Init(a.Bytes(), size); err != nil {
		t.Fatal(err)
	}
	p, err := NewProducer(a.Bytes(), size, testMax, opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConsumer(b.Bytes(), size, testMax, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(); c.Close() })
	return p, c
}

// message returns message i of a deterministic stream: its length cycles
// through sizes that hit every path (empty, unaligned, one record, exactly a
// record, fragmented), its bytes say who it is.
func message(i, size int) []byte {
	frag := MaxRecord(size)
	lens := []int{0, 1, 7, 8, 9, 100, frag - 1, frag, frag + 1, 3*frag + 5, size + 3}
	n := lens[i%len(lens)]
	m := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(i), 7))
	for j := range m {
		m[j] = byte(r.Uint32())
	}
	return m
}

func TestMessagesRoundTrip(t *testing.T) {
	for _, size := range []int{MinSize, 64 << 10} {
		p, c := pair(t, size, Options{})
		const n = 500
		errc := make(chan error, 1)
		go func() {
			for i := range n {
				if err := p.Write(message(i, size)); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		var buf []byte
		for i := range n {
			var err error
			buf, err = c.Read(buf)
			if err != nil {
				t.Fatalf("size %d: read %d: %v", size, i, err)
			}
			if want := message(i, size); !bytes.Equal(buf, want) {
				t.Fatalf("size %d: message %d: have %d bytes, want %d", size, i, len(buf), len(want))
			}
		}
		if err := <-errc; err != nil {
			t.Fatalf("size %d: write: %v", size, err)
		}
	}
}

// Every spin setting, including none (every wait sleeps on the futex), must
// deliver everything.
func TestWaitModes(t *testing.T) { checkWaitModes(t) }

func checkWaitModes(t *testing.T) {
	for _, spin := range []Options{{Spin: -1}, {Spin: 1}, {Spin: 1 << 20}} {
		p, c := pair(t, MinSize, spin)
		done := make(chan error, 1)
		go func() {
			for i := range 2000 {
				if err := p.Write(binary.LittleEndian.AppendUint32(nil, uint32(i))); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		for i := range 2000 {
			m, err := c.Read(nil)
			if err != nil || binary.LittleEndian.Uint32(m) != uint32(i) {
				t.Fatalf("spin %v: message %d: %x, %v", spin.Spin, i, m, err)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestTooLarge(t *testing.T) {
	p, _ := pair(t, MinSize, Options{})
	if err := p.Write(make([]byte, testMax+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("write over the limit: %v, want ErrTooLarge", err)
	}
}

func TestTryRead(t *testing.T) {
	p, c := pair(t, MinSize, Options{})
	if m, ok, err := c.TryRead(nil); ok || err != nil || m != nil {
		t.Fatalf("TryRead on an empty ring = %x, %v, %v", m, ok, err)
	}
	want := message(9, MinSize) // fragmented
	if err := p.Write(want); err != nil {
		t.Fatal(err)
	}
	m, ok, err := c.TryRead(make([]byte, 0, 10))
	if !ok || err != nil || !bytes.Equal(m, want) {
		t.Fatalf("TryRead = %d bytes, %v, %v", len(m), ok, err)
	}
}

// A message whose first records are there but not the rest is kept by TryRead
// and finished by the next read; Peek shows its first record until TryRead
// has taken it, then nothing.
func TestTryReadPartial(t *testing.T) {
	size := MinSize
	a, b := twoMappings(t, Bytes(size))
	Init(a.Bytes(), size)
	c, err := NewConsumer(b.Bytes(), size, testMax, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frag := MaxRecord(size)
	data := a.Bytes()[ControlBytes:]
	put := func(off, n int, flags uint32, fill byte) int {
		binary.LittleEndian.PutUint32(data[off:], uint32(n))
		binary.LittleEndian.PutUint32(data[off+4:], flags)
		for i := range n {
			data[off+8+i] = fill
		}
		return off + 8 + align8(n)
	}
	head := word64(a.Bytes(), offHead)
	end := put(0, frag, flagMore, 'a')
	head.Store(uint64(end))
	var peek [4]byte
	if n := c.Peek(peek[:]); string(peek[:n]) != "aaaa" {
		t.Fatalf("a message's first record: Peek = %q, want %q", peek[:n], "aaaa")
	}
	if m, ok, err := c.TryRead(nil); ok || err != nil {
		t.Fatalf("half a message: %d bytes, %v, %v", len(m), ok, err)
	}
	if n := c.Peek(peek[:]); n != 0 { // once part of a message is read, Peek shows nothing
		t.Fatalf("half a message read: Peek = %q, want nothing", peek[:n])
	}
	end = put(end, 3, 0, 'b')
	head.Store(uint64(end))
	m, err := c.Read(nil)
	if err != nil || len(m) != frag+3 || m[0] != 'a' || m[frag] != 'b' {
		t.Fatalf("finished message: %d bytes, %v", len(m), err)
	}
}

func TestCloseWakesReader(t *testing.T) {
	_, c := pair(t, MinSize, Options{Spin: -1})
	errc := make(chan error)
	go func() {
		_, err := c.Read(nil)
		errc <- err
	}()
	c.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("read on a closed ring: %v, want ErrClosed", err)
	}
	if _, err := c.Read(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
}

func TestCloseWakesWriter(t *testing.T) {
	p, _ := pair(t, MinSize, Options{Spin: -1})
	errc := make(chan error)
	go func() {
		for {
			if err := p.Write(make([]byte, 500)); err != nil {
				errc <- err
				return
			}
		}
	}()
	p.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("write on a closed ring: %v, want ErrClosed", err)
	}
}

func TestShutdownDrains(t *testing.T) {
	p, c := pair(t, MinSize, Options{})
	for i := range 3 {
		if err := p.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	c.Shutdown(io.EOF)
	p.Write([]byte{9}) // after the peer is gone: not served
	for i := range 3 {
		m, err := c.Read(nil)
		if err != nil || len(m) != 1 || m[0] != byte(i) {
			t.Fatalf("message %d after shutdown: %x, %v", i, m, err)
		}
	}
	if _, err := c.Read(nil); err != io.EOF {
		t.Fatalf("read past the shutdown point: %v, want io.EOF", err)
	}
}

// A message the producer left unfinished when it went away is dropped.
func TestShutdownDropsPartial(t *testing.T) {
	size := MinSize
	a, b := twoMappings(t, Bytes(size))
	Init(a.Bytes(), size)
	c, _ := NewConsumer(b.Bytes(), size, testMax, Options{})
	defer c.Close()
	data := a.Bytes()[ControlBytes:]
	binary.LittleEndian.PutUint32(data, uint32(MaxRecord(size)))
	binary.LittleEndian.PutUint32(data[4:], flagMore)
	word64(a.Bytes(), offHead).Store(uint64(8 + MaxRecord(size)))
	c.Shutdown(io.EOF)
	if m, err := c.Read(nil); err != io.EOF {
		t.Fatalf("read of a message cut by shutdown: %d bytes, %v", len(m), err)
	}
}

func TestInterrupt(t *testing.T) {
	p, c := pair(t, MinSize, Options{Spin: -1})
	errc := make(chan error)
	go func() {
		_, err := c.Read(nil)
		errc <- err
	}()
	c.Interrupt()
	if err := <-errc; !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted read: %v", err)
	}
	if err := p.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	if m, err := c.Read(nil); err != nil || string(m) != "after" {
		t.Fatalf("read after an interrupt: %q, %v", m, err)
	}
}

// Many goroutines may write if they take turns; every message arrives whole.
func TestSerialisedProducers(t *testing.T) {
	p, c := pair(t, 16<<10, Options{})
	const writers, each = 4, 300
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := bytes.Repeat([]byte{byte(w)}, 1+(i*37)%5000)
				mu.Lock()
				err := p.Write(m)
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	seen := make([]int, writers)
	for range writers * each {
		m, err := c.Read(nil)
		if err != nil {
			t.Fatal(err)
		}
		w := int(m[0])
		if want := 1 + (seen[w]*37)%5000; len(m) != want || !bytes.Equal(m, bytes.Repeat(m[:1], want)) {
			t.Fatalf("writer %d message %d: %d bytes, want %d of one value", w, seen[w], len(m), want)
		}
		seen[w]++
	}
	wg.Wait()
}

// TestPending: the consumer sees whether a message waits behind the ones it
// read, and a closed end reports none.
func TestPending(t *testing.T) {
	p, c := pair(t, MinSize, Options{Spin: -1})
	if c.Pending() {
		t.Fatal("an empty ring has something pending")
	}
	for _, m := range []string{"one", "two"} {
		if err := p.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []bool{true, false} {
		if _, err := c.Read(nil); err != nil {
			t.Fatal(err)
		}
		if got := c.Pending(); got != want {
			t.Errorf("after read %d: Pending() = %v, want %v", i+1, got, want)
		}
	}
	if err := p.Write([]byte("three")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if c.Pending() {
		t.Error("a closed end reports something pending")
	}
}

// TestPeek: Peek shows the next message's first bytes, through wraps and
// fragments, and consumes nothing; an empty ring and a closed end show
// nothing (a message half read: TestTryReadPartial).
func TestPeek(t *testing.T) {
	size := MinSize
	p, c := pair(t, size, Options{Spin: -1})
	var buf [24]byte
	if n := c.Peek(buf[:]); n != 0 {
		t.Fatalf("an empty ring: Peek = %d bytes, want 0", n)
	}
	for i := range 40 {
		m := message(i, size)
		if len(m) > 2*MaxRecord(size) {
			continue // would wait for a reader
		}
		if err := p.Write(m); err != nil {
			t.Fatal(err)
		}
		want := m[:min(len(m), len(buf), MaxRecord(size))]
		for range 2 { // peeking twice sees the same
			if n := c.Peek(buf[:]); !bytes.Equal(buf[:n], want) {
				t.Fatalf("message %d (%d bytes): Peek = %x, want %x", i, len(m), buf[:n], want)
			}
		}
		got, err := c.Read(nil)
		if err != nil || !bytes.Equal(got, m) {
			t.Fatalf("message %d: Read after Peek = %d bytes, %v; want the message", i, len(got), err)
		}
	}
	if n := c.Peek(buf[:]); n != 0 {
		t.Fatalf("all read: Peek = %d bytes, want 0", n)
	}
	if err := p.Write([]byte("next")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := c.Peek(buf[:]); n != 0 {
		t.Fatalf("a closed end: Peek = %d bytes, want 0", n)
	}
}

// TestWatch: Watch reports unread data (at once, or once it has waited
// stale unread), not an empty ring (false once spin passes or quit says so),
// and the end of the ring; it may run beside a reader.
func TestWatch(t *testing.T) {
	p, c := pair(t, MinSize, Options{})
	never := func() bool { return false }
	if c.Watch(time.Millisecond, 0, never) {
		t.Error("Watch on an empty ring reported data")
	}
	if c.Watch(time.Hour, 0, func() bool { return true }) {
		t.Error("Watch on an empty ring reported data when told to quit")
	}
	if err := p.Write(message(3, MinSize)); err != nil {
		t.Fatal(err)
	}
	if !c.Watch(time.Millisecond, 0, never) {
		t.Error("Watch missed an unread message")
	}
	const stale = 3 * time.Millisecond
	start := time.Now()
	if !c.Watch(time.Hour, stale, never) {
		t.Error("Watch missed a message unread for long")
	}
	if waited := time.Since(start); waited < stale {
		t.Errorf("Watch reported a message unread for %v, want at least %v", waited, stale)
	}
	// A watcher beside a reader that keeps up sees nothing wait an hour.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if c.Watch(50*time.Millisecond, time.Hour, never) {
			t.Error("Watch reported a message waiting an hour")
		}
	}()
	for i := range 200 {
		if _, err := c.Read(nil); err != nil {
			t.Fatal(err)
		}
		if i < 199 {
			p.Write([]byte("8 bytes."))
		}
	}
	wg.Wait()
	c.Close()
	if !c.Watch(time.Hour, time.Hour, never) {
		t.Error("Watch on a closed ring did not report it")
	}
}

// TestOnEmpty: a consumer that has polled for its spin and found nothing
// runs OnEmpty before it sleeps, and again after each bounded sleep, until a
// message comes.
func TestOnEmpty(t *testing.T) {
	var calls sync.WaitGroup
	calls.Add(2)
	var n int
	var mu sync.Mutex
	onEmpty := func() {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n <= 2 {
			calls.Done()
		}
	}
	p, c := pair(t, MinSize, Options{Spin: time.Microsecond, Sleep: time.Millisecond, OnEmpty: onEmpty})
	got := make(chan []byte, 1)
	go func() {
		m, err := c.Read(nil)
		if err != nil {
			t.Error(err)
		}
		got <- m
	}()
	calls.Wait() // twice: before the first sleep and after it
	select {
	case m := <-got:
		t.Fatalf("Read returned %x with nothing written", m)
	default:
	}
	if err := p.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if m := <-got; string(m) != "x" {
		t.Fatalf("read %q, want x", m)
	}
}
