package ring

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

func newTestCompletion(t testing.TB) (*Completion, []byte) {
	t.Helper()
	mem := make([]byte, CompletionBytes)
	c, err := NewCompletion(mem, CompletionWords, CompletionWordStride, CompletionFaultsOffset, CompletionFaultsBytes)
	if err != nil {
		t.Fatal(err)
	}
	return c, mem
}

// A word is reached at its number and after, in sequence arithmetic: the
// numbers wrap. Words that do not exist are never reached.
func TestCompletionReached(t *testing.T) {
	c, _ := newTestCompletion(t)
	tests := []struct {
		word, seq uint32
		want      bool
	}{
		{0, 0, true},
		{0, 1, false},
		{5, 5, true},
		{6, 5, true},
		{4, 5, false},
		{0xffffffff, 0xffffffff, true},
		{0, 0xffffffff, true}, // wrapped past it
		{0xfffffffe, 1, false},
		{0x80000000, 0, false}, // more than half the space ahead: behind
	}
	for _, tt := range tests {
		c.Word(7).Store(tt.word)
		if have := c.Reached(7, tt.seq); have != tt.want {
			t.Errorf("word %#x, seq %#x: reached %v, want %v", tt.word, tt.seq, have, tt.want)
		}
	}
	for _, i := range []int{-1, CompletionWords, 1 << 20} {
		if c.Word(i) != nil || c.Reached(i, 0) {
			t.Errorf("word %d exists or is reached", i)
		}
	}
	if c.Offset(9) != 9*CompletionWordStride {
		t.Errorf("Offset(9) = %d", c.Offset(9))
	}
}

// Any nonzero byte in the fault area is a fault; the words' page is not.
func TestCompletionFaulted(t *testing.T) {
	c, mem := newTestCompletion(t)
	c.Word(3).Store(1)
	if c.Faulted() {
		t.Fatal("a clear fault area is faulted")
	}
	for _, off := range []int{CompletionFaultsOffset, CompletionFaultsOffset + 1234, CompletionBytes - 1} {
		mem[off] = 1
		if !c.Faulted() {
			t.Errorf("a byte at %d does not show", off)
		}
		mem[off] = 0
	}
}

// A geometry that does not fit the page, or misaligns a word, is refused:
// the client checks what the driver sent.
func TestNewCompletionRefuses(t *testing.T) {
	tests := []struct {
		name                                 string
		size, words, stride, faultsOff, flen int
	}{
		{"no words", 8192, 0, 64, 4096, 4096},
		{"words past the page", 8192, 129, 64, 8192, 0},
		{"stride unaligned", 8192, 64, 62, 4096, 4096},
		{"stride too small", 8192, 64, 2, 4096, 4096},
		{"faults over the words", 8192, 64, 64, 2048, 4096},
		{"faults past the page", 8192, 64, 64, 4096, 4104},
		{"faults unaligned", 8192, 64, 64, 4100, 4088},
		{"negative faults", 8192, 64, 64, 4096, -8},
		{"negative stride", 8192, 64, -64, 4096, 4096},
	}
	for _, tt := range tests {
		if _, err := NewCompletion(make([]byte, tt.size), tt.words, tt.stride, tt.faultsOff, tt.flen); !errors.Is(err, ErrLayout) {
			t.Errorf("%s: %v, want ErrLayout", tt.name, err)
		}
	}
}

// FuzzNewCompletion: whatever geometry a driver sends, the client either
// refuses it or reads the page without leaving it.
func FuzzNewCompletion(f *testing.F) {
	f.Add(CompletionBytes, CompletionWords, CompletionWordStride, CompletionFaultsOffset, CompletionFaultsBytes)
	f.Add(4096, 1, 4, 8, 0)
	f.Add(8192, 128, 64, 8192, 0)
	f.Fuzz(func(t *testing.T, size, words, stride, faultsOff, faultsLen int) {
		if size < 0 || size > 1<<16 {
			return
		}
		c, err := NewCompletion(make([]byte, size), words, stride, faultsOff, faultsLen)
		if err != nil {
			if !errors.Is(err, ErrLayout) {
				t.Fatalf("error %v is not ErrLayout", err)
			}
			return
		}
		for i := range c.Words() {
			c.Word(i).Add(1)
			if !c.Reached(i, 1) {
				t.Fatalf("word %d not reached after its write", i)
			}
		}
		if c.Faulted() { // the words never overlap the fault area
			t.Fatal("writing the words faulted the page")
		}
	})
}

// Memory made with CreateReadOnlyShared can be opened only read-only by the
// peer; memory from Create is not sealed against writes, and OpenReadOnly
// refuses it.
func TestReadOnlyShared(t *testing.T) {
	shm, err := CreateReadOnlyShared("test", CompletionBytes)
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	shm.Bytes()[100] = 7 // the creator's mapping stays writable
	fd, err := unix.Dup(shm.FD())
	if err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(fd, CompletionBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.Bytes()[100] != 7 {
		t.Errorf("the peer reads %d, want 7", ro.Bytes()[100])
	}
	if err := unix.Mprotect(ro.Bytes(), unix.PROT_READ|unix.PROT_WRITE); err == nil {
		t.Errorf("the peer made its mapping writable")
	}
	if _, err := unix.Pwrite(ro.FD(), []byte{1}, 0); err == nil {
		t.Errorf("the peer wrote through its descriptor")
	}
	fd, _ = unix.Dup(shm.FD())
	if _, err := OpenReadOnly(fd, CompletionBytes+4096); !errors.Is(err, ErrLayout) {
		t.Errorf("wrong size: %v, want ErrLayout", err)
	}

	plain, err := Create("test", CompletionBytes, false)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	fd, _ = unix.Dup(plain.FD())
	if _, err := OpenReadOnly(fd, CompletionBytes); !errors.Is(err, ErrNotSealed) {
		t.Errorf("memory not sealed against writes: %v, want ErrNotSealed", err)
	}
}
