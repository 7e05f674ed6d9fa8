package ring

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Staging geometry.
const (
	// MaxSlots bounds the slots of a staging area.
	MaxSlots = 1024
	// MinSlotSize and MaxSlotSize bound a slot, a power of two.
	MinSlotSize = 4096
	MaxSlotSize = 1 << 30

	offStagingSlots = 8   // u32
	offStagingSlot  = 16  // u64 slot size
	offStagingBell  = 128 // u32 futex word: a client waits for a completion

	stagingMagic   = 0x54535047 // "GPST"
	stagingVersion = 1

	// failedBit in a completion word says the device copy failed.
	failedBit = 1 << 32
)

// doneBytes is the size of the completion words, rounded up to whole pages so
// that the slots start page aligned.
func doneBytes(slots int) int { return (slots*8 + ControlBytes - 1) &^ (ControlBytes - 1) }

// StagingBytes returns the shared memory a staging area of slots slots of
// slotSize bytes takes.
func StagingBytes(slots, slotSize int) int {
	return ControlBytes + doneBytes(slots) + slots*slotSize
}

func checkStaging(mem []byte, slots, slotSize int) error {
	if slots < 1 || slots > MaxSlots {
		return fmt.Errorf("%w: %d staging slots, want 1 to %d", ErrLayout, slots, MaxSlots)
	}
	if slotSize < MinSlotSize || slotSize > MaxSlotSize || bits.OnesCount(uint(slotSize)) != 1 {
		return fmt.Errorf("%w: staging slot of %d bytes is not a power of two in [%d, %d]", ErrLayout, slotSize, MinSlotSize, MaxSlotSize)
	}
	if uint64(slots)*uint64(slotSize) > maxShm {
		return fmt.Errorf("%w: %d slots of %d bytes", ErrLayout, slots, slotSize)
	}
	if len(mem) < StagingBytes(slots, slotSize) {
		return fmt.Errorf("%w: %d bytes of memory for %d slots of %d", ErrLayout, len(mem), slots, slotSize)
	}
	return nil
}

// InitStaging lays out a staging area at the start of mem. Only the side that
// creates the memory calls it.
func InitStaging(mem []byte, slots, slotSize int) error {
	if err := checkStaging(mem, slots, slotSize); err != nil {
		return err
	}
	clear(mem[:ControlBytes+doneBytes(slots)])
	le := binary.LittleEndian
	le.PutUint32(mem[offMagic:], stagingMagic)
	le.PutUint32(mem[offVersion:], stagingVersion)
	le.PutUint32(mem[offStagingSlots:], uint32(slots))
	le.PutUint64(mem[offStagingSlot:], uint64(slotSize))
	return nil
}

// Staging is a shared area of equal slots for bulk copies, with one completion
// word per slot. Its methods are safe for concurrent use.
type Staging struct {
	ops      sync.RWMutex // shared by every method, exclusive by Close
	closed   atomic.Bool
	slots    int
	slotSize uint64
	done     []byte // completion words
	data     []byte // the slots
	bell     *atomic.Uint32
	opts     Options
}

// NewStaging attaches to the staging area of slots slots of slotSize bytes at
// the start of mem.
func NewStaging(mem []byte, slots, slotSize int, opts Options) (*Staging, error) {
	if err := checkStaging(mem, slots, slotSize); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if m, v, n, s := le.Uint32(mem[offMagic:]), le.Uint32(mem[offVersion:]), le.Uint32(mem[offStagingSlots:]), le.Uint64(mem[offStagingSlot:]); m != stagingMagic || v != stagingVersion || n != uint32(slots) || s != uint64(slotSize) {
		return nil, fmt.Errorf("%w: staging control page says magic %#x version %d, %d slots of %d", ErrLayout, m, v, n, s)
	}
	start := ControlBytes + doneBytes(slots)
	end := start + slots*slotSize
	return &Staging{
		slots: slots, slotSize: uint64(slotSize),
		done: mem[ControlBytes:start:start], data: mem[start:end:end],
		bell: word32(mem, offStagingBell), opts: opts.withDefaults(),
	}, nil
}

// Slots returns the number of slots.
func (s *Staging) Slots() int { return s.slots }

// SlotSize returns the size of one slot.
func (s *Staging) SlotSize() int { return int(s.slotSize) }

// Data returns every slot, in order: the memory a driver registers for DMA.
func (s *Staging) Data() []byte { return s.data }

// Slot returns slot i's memory; i must be in [0, Slots()).
func (s *Staging) Slot(i int) []byte {
	off := uint64(i) * s.slotSize
	return s.data[off : off+s.slotSize : off+s.slotSize]
}

// Offset returns where slot i starts in Data.
func (s *Staging) Offset(i int) uint64 { return uint64(i) * s.slotSize }

// Locate checks a range a request names, [off, off+n) of Data, and returns the
// slot it lies in: it must be non-empty and inside one slot.
func (s *Staging) Locate(off, n uint64) (int, error) {
	total := uint64(s.slots) * s.slotSize
	if n == 0 || n > s.slotSize || off >= total || n > total-off {
		return 0, fmt.Errorf("%w: staging range %d+%d outside %d slots of %d bytes", ErrLayout, off, n, s.slots, s.slotSize)
	}
	slot := off / s.slotSize
	if (off+n-1)/s.slotSize != slot {
		return 0, fmt.Errorf("%w: staging range %d+%d crosses slot %d's end", ErrLayout, off, n, slot)
	}
	return int(slot), nil
}

// Complete records that the copy of generation gen through slot i finished
// (failed: with an error) and wakes clients waiting for a slot. i must be in
// range. After Close it does nothing.
//
// A slot's word only moves forward: a generation at or before the one it
// holds (in serial-number order) is ignored, so the first report of a copy
// stands and a late, duplicate report of an earlier copy cannot hide a later
// one's (a driver that learns of a completion two ways reports it twice).
func (s *Staging) Complete(i int, gen uint32, failed bool) {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if s.closed.Load() {
		return
	}
	w := uint64(gen)
	if failed {
		w |= failedBit
	}
	word := word64(s.done, 8*i)
	for {
		old := word.Load()
		if int32(gen-uint32(old)) <= 0 {
			return
		}
		if word.CompareAndSwap(old, w) {
			break
		}
	}
	ringBell(s.bell)
}

// Completed returns the generation last completed through slot i and whether
// that copy failed. i must be in range. After Close it returns (0, true).
func (s *Staging) Completed(i int) (gen uint32, failed bool) {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if s.closed.Load() {
		return 0, true
	}
	return s.completed(i)
}

func (s *Staging) completed(i int) (uint32, bool) {
	w := word64(s.done, 8*i).Load()
	return uint32(w), w&failedBit != 0
}

// View calls fn with Completed's view of the slots, under the area's lock
// (fn must call no method of s); ErrClosed once the area is closed. Callers
// that hold locks of their own while looking at slots take them inside fn, so
// that the order is always s's lock, then theirs.
func (s *Staging) View(fn func(completed func(slot int) (gen uint32, failed bool))) error {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	fn(s.completed)
	return nil
}

// Wait waits until ready reports true, the area is closed (ErrClosed), or ctx
// ends. ready is given Completed to look at slots with (it must call no other
// method of s: Wait holds s's lock).
func (s *Staging) Wait(ctx context.Context, ready func(completed func(slot int) (gen uint32, failed bool)) bool) error {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, s.wake)
		defer stop()
	}
	stopped := func() error {
		if s.closed.Load() {
			return ErrClosed
		}
		return ctx.Err()
	}
	return waitUntil(s.bell, &s.opts, false, func() bool { return ready(s.completed) }, stopped, nil)
}

func (s *Staging) wake() {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if !s.closed.Load() {
		wakeAll(s.bell)
	}
}

// Close fails waits and makes Complete a no-op from now on, and returns once no
// method touches the memory.
func (s *Staging) Close() {
	if !s.closed.Swap(true) {
		wakeAll(s.bell)
	}
	s.ops.Lock()
	s.ops.Unlock()
}
