package ring

import (
	"fmt"
	"sync/atomic"
)

// A completion page is memory the driver shares, read-only, with a
// latency-critical session's client (CreateReadOnlyShared) and maps for the
// device: the device writes the session's streams' fences into its words
// and the guard's fault records into its fault area, so the client can
// wait for its work, and see whether a guarded kernel was caught, with no
// driver on the path. Its geometry travels in api/v1's CompletionOpened.
const (
	// CompletionBytes is a page's size: the words' page, then the fault
	// records' page.
	CompletionBytes = 8192
	// CompletionWordStride keeps each word on a cache line of its own: the
	// client polls one while the device writes another.
	CompletionWordStride = 64
	// CompletionWords is how many fence words a page has.
	CompletionWords = 4096 / CompletionWordStride
	// CompletionFaultsOffset and CompletionFaultsBytes place the fault area.
	CompletionFaultsOffset = 4096
	CompletionFaultsBytes  = CompletionBytes - CompletionFaultsOffset
)

// Completion reads and hands out the words of a completion page.
type Completion struct {
	mem    []byte
	words  int
	stride int
	faults []byte
}

// NewCompletion returns a view of mem, a completion page of the given
// geometry. A geometry that does not fit mem, or misaligns a word, is
// ErrLayout: a client checks what the driver sent.
func NewCompletion(mem []byte, words, stride, faultsOffset, faultsBytes int) (*Completion, error) {
	n := len(mem)
	ok := words > 0 && stride >= 4 && stride%4 == 0 && words <= n/stride &&
		faultsOffset >= words*stride && faultsOffset%8 == 0 && faultsBytes >= 0 && faultsBytes%8 == 0 &&
		faultsOffset <= n && faultsBytes <= n-faultsOffset
	if !ok {
		return nil, fmt.Errorf("%w: completion page of %d bytes: %d words of stride %d, faults %d+%d",
			ErrLayout, n, words, stride, faultsOffset, faultsBytes)
	}
	return &Completion{mem: mem, words: words, stride: stride, faults: mem[faultsOffset : faultsOffset+faultsBytes]}, nil
}

// Words returns how many fence words the page has.
func (c *Completion) Words() int { return c.words }

// Word returns fence word i, or nil if there is none.
func (c *Completion) Word(i int) *atomic.Uint32 {
	if i < 0 || i >= c.words {
		return nil
	}
	return word32(c.mem, i*c.stride)
}

// Offset returns word i's offset in the page.
func (c *Completion) Offset(i int) int { return i * c.stride }

// Reached reports whether word i holds seq or a later number (in sequence
// arithmetic: the numbers wrap). A word that does not exist is never reached.
func (c *Completion) Reached(i int, seq uint32) bool {
	w := c.Word(i)
	return w != nil && int32(w.Load()-seq) >= 0
}

// Faults returns the fault area, where the driver places the session's
// guarded programs' fault records.
func (c *Completion) Faults() []byte { return c.faults }

// Faulted reports whether anything was written into the fault area: a
// guarded kernel recorded a suppressed access, whose details the driver
// reports.
func (c *Completion) Faulted() bool {
	for off := 0; off+8 <= len(c.faults); off += 8 {
		if word64(c.faults, off).Load() != 0 {
			return true
		}
	}
	return false
}
