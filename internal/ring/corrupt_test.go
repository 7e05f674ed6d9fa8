package ring

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// hostileRing is a ring whose producer side the test writes by hand, as a
// hostile peer would.
type hostileRing struct {
	mem  []byte
	data []byte
	c    *Consumer
}

func newHostile(t *testing.T, size int) *hostileRing {
	t.Helper()
	a, b := twoMappings(t, Bytes(size))
	if err := Init(a.Bytes(), size); err != nil {
		t.Fatal(err)
	}
	c, err := NewConsumer(b.Bytes(), size, 3*MaxRecord(size), Options{Spin: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &hostileRing{mem: a.Bytes(), data: a.Bytes()[ControlBytes:], c: c}
}

func (h *hostileRing) rec(off int, n, flags uint32) int {
	binary.LittleEndian.PutUint32(h.data[off:], n)
	binary.LittleEndian.PutUint32(h.data[off+4:], flags)
	return off + 8 + align8(int(n))
}

func (h *hostileRing) publish(head uint64) { word64(h.mem, offHead).Store(head) }

func TestCorruptRecords(t *testing.T) {
	const size = MinSize
	frag := uint32(MaxRecord(size))
	tests := []struct {
		name  string
		write func(h *hostileRing)
	}{
		{"head not aligned", func(h *hostileRing) { h.rec(0, 1, 0); h.publish(12) }},
		{"head more than the ring ahead", func(h *hostileRing) { h.publish(size + 8) }},
		{"head behind the tail", func(h *hostileRing) { h.publish(^uint64(0) &^ 7) }},
		{"header alone published", func(h *hostileRing) { h.rec(0, 16, 0); h.publish(8) }},
		{"record past the head", func(h *hostileRing) { h.publish(uint64(h.rec(0, 100, 0) - 8)) }},
		{"record over the record limit", func(h *hostileRing) { h.publish(uint64(h.rec(0, frag+1, 0))) }},
		{"record wrapping the ring", func(h *hostileRing) {
			// Move both ends near the end of the data area, then write a
			// record that runs past it.
			word64(h.mem, offTail).Store(size - 64)
			word64(h.mem, offHead).Store(size - 64)
			h.c.tail = size - 64
			h.rec(size-64, 100, 0)
			h.publish(size - 64 + 8 + 104)
		}},
		{"unknown flags", func(h *hostileRing) { h.publish(uint64(h.rec(0, 1, 4))) }},
		{"pad at the start", func(h *hostileRing) { h.rec(0, 0, flagPad); h.publish(size) }},
		{"pad with a length", func(h *hostileRing) {
			next := h.rec(0, 8, 0)
			h.rec(next, 3, flagPad)
			h.publish(size)
		}},
		{"pad past the head", func(h *hostileRing) {
			next := h.rec(0, 8, 0)
			h.rec(next, 0, flagPad)
			h.publish(uint64(next + 8))
		}},
		{"short fragment", func(h *hostileRing) { h.publish(uint64(h.rec(0, 10, flagMore))) }},
		{"message over the limit", func(h *hostileRing) {
			off := 0
			for range 4 {
				off = h.rec(off, frag, flagMore)
			}
			h.publish(uint64(off))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHostile(t, size)
			tt.write(h)
			var err error
			for range 4 { // good records before the bad one are fine
				if _, err = h.c.Read(nil); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read: %v, want ErrCorrupt", err)
			}
			if _, _, again := h.c.TryRead(nil); !errors.Is(again, ErrCorrupt) {
				t.Fatalf("read after corruption: %v, want ErrCorrupt again", again)
			}
		})
	}
}

// The consumer's position is the producer's to distrust.
func TestCorruptTail(t *testing.T) {
	p, _ := pair(t, MinSize, Options{Spin: -1})
	if err := p.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	p.v.tail.Store(1 << 40)
	if err := p.Write([]byte("y")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("write with a tail ahead of the head: %v, want ErrCorrupt", err)
	}
}

func TestAttachChecks(t *testing.T) {
	mem := make([]byte, Bytes(MinSize))
	if err := Init(mem, 5000); !errors.Is(err, ErrLayout) {
		t.Errorf("Init with a size not a power of two: %v", err)
	}
	if err := Init(mem, 2*MinSize); !errors.Is(err, ErrLayout) {
		t.Errorf("Init with too little memory: %v", err)
	}
	if _, err := NewConsumer(mem, MinSize, 100, Options{}); !errors.Is(err, ErrLayout) {
		t.Errorf("attach to memory never initialised: %v", err)
	}
	Init(mem, MinSize)
	if _, err := NewProducer(mem, 2*MinSize, 100, Options{}); !errors.Is(err, ErrLayout) {
		t.Errorf("attach with another size: %v", err)
	}
	binary.LittleEndian.PutUint64(mem[offHead:], 12)
	if _, err := NewConsumer(mem, MinSize, 100, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("attach with a misaligned head: %v", err)
	}
}

func TestOpenRefusesUnsafeMemory(t *testing.T) {
	unsealed := func() int {
		fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
		if err != nil {
			t.Skip("no memfd:", err)
		}
		unix.Ftruncate(fd, 8192)
		return fd
	}
	if _, err := Open(unsealed(), 8192, false); !errors.Is(err, ErrNotSealed) {
		t.Errorf("unsealed memfd: %v, want ErrNotSealed", err)
	}
	s, err := Create("sized", 8192, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fd, _ := unix.Dup(s.FD())
	if _, err := Open(fd, 4096, false); !errors.Is(err, ErrLayout) {
		t.Errorf("memfd of another size: %v, want ErrLayout", err)
	}
	if err := unix.Ftruncate(s.FD(), 4096); err == nil {
		t.Error("a sealed memfd could be shrunk")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pfd, _ := unix.Dup(int(r.Fd()))
	r.Close()
	if _, err := Open(pfd, 4096, false); !errors.Is(err, ErrLayout) {
		t.Errorf("a pipe: %v, want ErrLayout", err)
	}
	if _, err := Create("huge", -1, false); !errors.Is(err, ErrLayout) {
		t.Errorf("negative size: %v", err)
	}
}

func TestShmTakeFD(t *testing.T) {
	s, err := Create("take", 4096, false)
	if err != nil {
		t.Fatal(err)
	}
	fd := s.TakeFD()
	if fd < 0 || s.FD() != -1 || s.TakeFD() != -1 {
		t.Fatalf("TakeFD = %d, then FD %d", fd, s.FD())
	}
	s.Bytes()[0] = 1 // the mapping stays
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Close(fd); err != nil {
		t.Fatalf("the taken descriptor was closed by Close: %v", err)
	}
}
