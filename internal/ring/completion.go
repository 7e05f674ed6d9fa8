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

// Launch watching (api/v1 WatchLaunches). The rest of each word's cache
// line says, for the stream whose fences write the word, how many of the
// stream's launches the driver has issued with a fence behind them, and
// that fence's number: a client that counted the launches it wrote can
// wait for them with no request at all. The first line also holds two
// words for the whole page: whether the driver publishes, and a count it
// raises whenever the client must ask it instead (an error to report).
// Only the driver writes them; each is written whole, and a slot's number
// before its count, so that a count read then a number read belong
// together or the number is a later one.
const (
	slotStream   = 8  // u64: the stream's handle plus one; 0: no stream
	slotLaunches = 16 // u64: launches issued with a fence behind them
	slotSeq      = 24 // u32: that fence's number
	pageWatching = 32 // u32, first line only: 1 while the driver publishes
	pageCalls    = 36 // u32, first line only: raised when the client must ask
	slotBytes    = 40 // what a word's line must hold for the above
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

// Watchable reports whether the page's geometry leaves room beside each
// word for launch watching, its 64-bit fields aligned.
func (c *Completion) Watchable() bool { return c.stride >= slotBytes && c.stride%8 == 0 }

// SetWatching says whether the driver publishes its launches (driver side).
func (c *Completion) SetWatching(on bool) {
	if !c.Watchable() {
		return
	}
	v := uint32(0)
	if on {
		v = 1
	}
	word32(c.mem, pageWatching).Store(v)
}

// Watching reports whether the driver publishes its launches.
func (c *Completion) Watching() bool {
	return c.Watchable() && word32(c.mem, pageWatching).Load() == 1
}

// RaiseCalls tells the client to ask the driver at its next synchronize
// (driver side).
func (c *Completion) RaiseCalls() {
	if c.Watchable() {
		word32(c.mem, pageCalls).Add(1)
	}
}

// Calls returns the count RaiseCalls raises: a client that sees it move
// asks the driver.
func (c *Completion) Calls() uint32 {
	if !c.Watchable() {
		return 0
	}
	return word32(c.mem, pageCalls).Load()
}

// SetStream gives word i's slot to stream (driver side): no launches
// published yet. It must be called before the word's first publication
// and not while a client may still wait on the slot's previous stream.
func (c *Completion) SetStream(i int, stream uint64) {
	if !c.Watchable() || i < 0 || i >= c.words {
		return
	}
	off := i * c.stride
	word64(c.mem, off+slotLaunches).Store(0)
	word32(c.mem, off+slotSeq).Store(0)
	word64(c.mem, off+slotStream).Store(stream + 1)
}

// ClearStream frees word i's slot (driver side).
func (c *Completion) ClearStream(i int) {
	if !c.Watchable() || i < 0 || i >= c.words {
		return
	}
	word64(c.mem, i*c.stride+slotStream).Store(0)
}

// Publish says that the first launches launches of word i's stream are
// issued and fence seq, written into word i, follows them (driver side).
func (c *Completion) Publish(i int, launches uint64, seq uint32) {
	if !c.Watchable() || i < 0 || i >= c.words {
		return
	}
	off := i * c.stride
	word32(c.mem, off+slotSeq).Store(seq)
	word64(c.mem, off+slotLaunches).Store(launches)
}

// StreamWord returns the word whose slot stream has, or -1.
func (c *Completion) StreamWord(stream uint64) int {
	if !c.Watchable() {
		return -1
	}
	for i := range c.words {
		if word64(c.mem, i*c.stride+slotStream).Load() == stream+1 {
			return i
		}
	}
	return -1
}

// Published returns how many launches of word i's stream are issued with a
// fence behind them, and that fence's number (or a later fence's).
func (c *Completion) Published(i int) (launches uint64, seq uint32) {
	if !c.Watchable() || i < 0 || i >= c.words {
		return 0, 0
	}
	off := i * c.stride
	launches = word64(c.mem, off+slotLaunches).Load()
	return launches, word32(c.mem, off+slotSeq).Load()
}
