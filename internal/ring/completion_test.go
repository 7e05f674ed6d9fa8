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
		if !c.Watchable() {
			return
		}
		// Nor do the slots beside them, nor the page-wide words.
		c.SetWatching(true)
		c.RaiseCalls()
		for i := range c.Words() {
			c.SetStream(i, uint64(i)+100)
			c.Publish(i, uint64(i)+1, 7)
		}
		for i := range c.Words() {
			if c.StreamWord(uint64(i)+100) != i || !c.Reached(i, 1) || c.Reached(i, 2) {
				t.Fatalf("slot %d: stream at %d, word reached 1 %v, 2 %v", i, c.StreamWord(uint64(i)+100), c.Reached(i, 1), c.Reached(i, 2))
			}
			if n, seq := c.Published(i); n != uint64(i)+1 || seq != 7 {
				t.Fatalf("slot %d published %d, %d", i, n, seq)
			}
		}
		if c.Faulted() || !c.Watching() || c.Calls() != 1 {
			t.Fatalf("after the slots: faulted %v, watching %v, calls %d", c.Faulted(), c.Watching(), c.Calls())
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

// Launch watching: the driver's side gives a word's slot to a stream and
// publishes its issued launches; the client's side finds the slot by
// stream and reads back what was published, and the page-wide words. A
// page too narrow for the slots has none of it.
func TestCompletionWatch(t *testing.T) {
	c, _ := newTestCompletion(t)
	if !c.Watchable() || c.Watching() || c.Calls() != 0 {
		t.Fatalf("a new page: watchable %v, watching %v, calls %d; want true, false, 0", c.Watchable(), c.Watching(), c.Calls())
	}
	if i := c.StreamWord(0); i != -1 {
		t.Errorf("StreamWord(0) on a page with no streams = %d, want -1", i)
	}
	c.SetWatching(true)
	c.SetStream(3, 0) // the default stream
	c.SetStream(9, 77)
	c.Publish(3, 5, 41)
	c.Publish(9, 2, 7)
	for _, tt := range []struct {
		stream   uint64
		word     int
		launches uint64
		seq      uint32
	}{{0, 3, 5, 41}, {77, 9, 2, 7}} {
		i := c.StreamWord(tt.stream)
		if i != tt.word {
			t.Fatalf("StreamWord(%d) = %d, want %d", tt.stream, i, tt.word)
		}
		if n, seq := c.Published(i); n != tt.launches || seq != tt.seq {
			t.Errorf("Published(%d) = %d, %d; want %d, %d", i, n, seq, tt.launches, tt.seq)
		}
	}
	if i := c.StreamWord(78); i != -1 {
		t.Errorf("StreamWord of a stream with no slot = %d, want -1", i)
	}
	// The fence words themselves are untouched by the slots beside them.
	if w := c.Word(3).Load(); w != 0 {
		t.Errorf("word 3 = %d after its slot was written, want 0", w)
	}
	c.RaiseCalls()
	c.RaiseCalls()
	if !c.Watching() || c.Calls() != 2 {
		t.Errorf("watching %v, calls %d; want true, 2", c.Watching(), c.Calls())
	}
	// A slot given again starts from nothing; a cleared one is found no more.
	c.SetStream(9, 80)
	if n, seq := c.Published(9); n != 0 || seq != 0 || c.StreamWord(77) != -1 || c.StreamWord(80) != 9 {
		t.Errorf("slot 9 given to stream 80: published %d, %d, stream 77 at %d, 80 at %d; want 0, 0, -1, 9", n, seq, c.StreamWord(77), c.StreamWord(80))
	}
	c.ClearStream(9)
	if i := c.StreamWord(80); i != -1 {
		t.Errorf("a cleared slot is still found: %d", i)
	}
	c.SetWatching(false)
	if c.Watching() {
		t.Error("still watching after SetWatching(false)")
	}

	narrowMem := make([]byte, CompletionBytes)
	narrow, err := NewCompletion(narrowMem, 16, 32, 4096, 4096)
	if err != nil {
		t.Fatal(err)
	}
	narrow.SetWatching(true)
	narrow.SetStream(1, 0)
	narrow.Publish(1, 1, 1)
	narrow.RaiseCalls()
	if narrow.Watchable() || narrow.Watching() || narrow.StreamWord(0) != -1 || narrow.Calls() != 0 {
		t.Error("a page of 32-byte lines has launch watching")
	}
	for off, b := range narrowMem {
		if b != 0 {
			t.Fatalf("a narrow page's byte %d = %d: a slot was written over its words", off, b)
		}
	}
}
