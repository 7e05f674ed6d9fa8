package ring

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzRing builds a ring of MinSize in ordinary memory from a data area, a
// tail and the number of bytes published past it, as a hostile producer could
// leave them, and attaches a consumer with a limit of three records.
func fuzzRing(content []byte, tail uint64, avail uint32) (*Consumer, error) {
	mem := make([]byte, Bytes(MinSize))
	Init(mem, MinSize)
	copy(mem[ControlBytes:], content)
	word64(mem, offTail).Store(tail)
	word64(mem, offHead).Store(tail + uint64(avail))
	return NewConsumer(mem, MinSize, 3*MaxRecord(MinSize), Options{Spin: -1})
}

// fuzzSeeds writes real traffic (wrapping, padding and fragmenting) with a
// producer and returns the rings it left, each half read.
func fuzzSeeds() [][3]any {
	var seeds [][3]any
	for skip := range 12 {
		mem := make([]byte, Bytes(MinSize))
		Init(mem, MinSize)
		p, _ := NewProducer(mem, MinSize, 3*MaxRecord(MinSize), Options{Spin: -1})
		c, _ := NewConsumer(mem, MinSize, 3*MaxRecord(MinSize), Options{Spin: -1})
		for i := range skip {
			p.Write(message(i, MinSize/2))
			c.Read(nil)
		}
		for i := skip; i < skip+4; i++ {
			m := message(i, MinSize/2)
			free := p.v.size - (p.head - c.tail)
			if len(m) > 3*MaxRecord(MinSize) || uint64(2*len(m)+64) > free {
				continue // would block: nobody reads here
			}
			p.Write(m)
		}
		seeds = append(seeds, [3]any{append([]byte(nil), mem[ControlBytes:]...), c.tail, uint32(p.head - c.tail)})
	}
	return seeds
}

// FuzzConsumer feeds arbitrary ring contents to the consumer. It must never
// panic or hang, never return a message over its limit, and once it reports
// corruption it must keep doing so.
func FuzzConsumer(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s[0].([]byte), s[1].(uint64), s[2].(uint32))
	}
	f.Fuzz(func(t *testing.T, content []byte, tail uint64, avail uint32) {
		c, err := fuzzRing(content, tail, avail)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("attach: %v", err)
			}
			return
		}
		var buf []byte
		var peek [16]byte
		for range 64 {
			n := c.Peek(peek[:]) // a hint: never a panic, and true to what Read returns
			m, ok, err := c.TryRead(buf)
			if ok && err == nil && !bytes.Equal(peek[:n], m[:min(n, len(m))]) || ok && n > len(m) {
				t.Fatalf("Peek = %x, then TryRead = %x", peek[:n], m[:min(len(m), 16)])
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("read: %v, want ErrCorrupt", err)
				}
				if _, _, again := c.TryRead(nil); !errors.Is(again, ErrCorrupt) {
					t.Fatalf("read after corruption: %v", again)
				}
				return
			}
			if !ok {
				return
			}
			if len(m) > 3*MaxRecord(MinSize) {
				t.Fatalf("message of %d bytes over the limit", len(m))
			}
			buf = m
		}
	})
}
