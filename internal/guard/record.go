package guard

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// ParamsVar is the module-scope .const variable the guard adds to every
// guarded module. The driver writes Params into it (cuModuleGetGlobal, then a
// copy) after loading the module and whenever the session's window grows;
// guarded code loads it once per function call into registers.
const ParamsVar = "__gpuos_guard"

// SinkVar is the module-scope .global variable, at least SinkSize bytes of
// zeros aligned to SinkSize, that a global load whose check fails reads
// instead (check.go, toSink; hoist.go, sinkBase). Nothing writes it; it is
// the module's own memory, not the session's, and needs nothing from the
// driver.
const SinkVar = "__gpuos_sink"

// SinkSize is the size and alignment of SinkVar: the widest load (.v8.b32,
// .v4.b64).
const SinkSize = 32

// ParamsSize is the size of ParamsVar in bytes.
const ParamsSize = 96

// Params are the values a guarded module reads from ParamsVar.
type Params struct {
	// Lo is the first address of the session's window (mem.Window.GuardRange);
	// it must be aligned to Span.
	Lo uint64
	// Span is hi-lo of the guard range, a power of two: every granule of
	// [Lo, Lo+Span) is backed, so an access inside cannot fault.
	Span uint64
	// Fault is the device address of the session's fault Record (host memory
	// the device can write); 0 disables recording (violations are still
	// suppressed).
	Fault uint64
	// Globals is where the driver placed the module's relocated .global
	// variables (Layout); 0 if it has none.
	Globals uint64
	// SharedReserve is how many bytes of shared memory above the kernel's
	// %total_smem_size a block may address without faulting: the reserved
	// shared memory of the device (1 KiB on sm_80 and sm_90, where it lies
	// below the user's shared memory), 0 on the sim.
	SharedReserve uint32
}

// Bytes encodes p as ParamsVar holds it (little-endian u64 words: lo, span
// mask, fault, globals, shared reserve, then the span mask with the
// alignment bits of each access width 2 to 128 set, and a zero word).
// Guarded code reads the masks as constants (ptxas folds them into the
// instructions that use them) instead of computing them in every thread.
func (p Params) Bytes() []byte {
	b := make([]byte, ParamsSize)
	m := ^(p.Span - 1)
	binary.LittleEndian.PutUint64(b[0:], p.Lo)
	binary.LittleEndian.PutUint64(b[8:], m)
	binary.LittleEndian.PutUint64(b[16:], p.Fault)
	binary.LittleEndian.PutUint64(b[24:], p.Globals)
	binary.LittleEndian.PutUint64(b[32:], uint64(p.SharedReserve))
	for w := 2; w <= 128; w *= 2 {
		binary.LittleEndian.PutUint64(b[paramMaskW(w):], m|uint64(w-1))
	}
	return b
}

// paramMaskW is the offset of the span mask for accesses of w bytes (a
// power of two, 2 to 128); 0 for other widths.
func paramMaskW(w int) int {
	if w < 2 || w > 128 || w&(w-1) != 0 {
		return 0
	}
	return paramMasks + 8*(log2(w)-1)
}

// Validate reports Params that would not confine accesses: a span that is not
// a power of two or a window base not aligned to it.
func (p Params) Validate() error {
	if p.Span == 0 || p.Span&(p.Span-1) != 0 {
		return fmt.Errorf("guard params: span %#x is not a power of two: %w", p.Span, ErrInvalid)
	}
	if p.Lo == 0 || p.Lo&(p.Span-1) != 0 || p.Lo+p.Span < p.Lo {
		return fmt.Errorf("guard params: window base %#x is not aligned to its span %#x: %w", p.Lo, p.Span, ErrInvalid)
	}
	return nil
}

// Offsets of the words in ParamsVar.
const (
	paramLo      = 0
	paramMask    = 8
	paramFault   = 16
	paramGlobals = 24
	paramReserve = 32
	paramMasks   = 40 // span mask | 1, | 3, | 7, ... | 127: seven words
)

// Unguarded values of ParamsVar, its initializer: no address passes a check
// (lo is odd and the span mask is 0, so addr&(W-1) never equals it) and
// nothing is recorded, until the driver writes real Params.
const (
	initLo   = 0x8000_0000_0000_0001
	initMask = 0
)

// RecordSize is the size of a fault Record in bytes (and its alignment).
const RecordSize = 32

// Kinds of violation a Record can hold (bits of Record.Kinds).
const (
	// KindAccess: a load, store, atomic or copy outside the session's window,
	// the block's shared memory or the function's local variables, or
	// misaligned.
	KindAccess uint32 = 1 << iota
	// KindTrap: the kernel executed trap or brkpt (stripped: the thread exits).
	KindTrap
	// KindAssert: the kernel called __assertfail (stripped: the thread exits).
	KindAssert
	// KindCall: an indirect call to an address that is not one of the
	// module's guarded functions, or a brx.idx index past its target list.
	KindCall
)

// Record is a session's fault word: what guarded code recorded about its
// violations. The device writes it with atomics; the driver reads it after
// each guarded launch completes and at synchronizing calls.
//
// Layout (little-endian): +0 u32 Count, +4 u32 Function, +8 u64 Addr,
// +16 u32 Kinds, +20 reserved (12 bytes, zero).
type Record struct {
	// Count is the number of violations (summed over threads; each access
	// site counts once per thread and call).
	Count uint32
	// Function is the 1-based index in Result.Functions of the function that
	// recorded first (a kernel or a device function); 0 if none.
	Function uint32
	// Addr is the first recorder's offending address (for an access), or the
	// PTX source line (for a trap, an assert or a bad call).
	Addr uint64
	// Kinds is the union of the Kind bits recorded.
	Kinds uint32
}

// DecodeRecord reads a Record from the first RecordSize bytes of b.
func DecodeRecord(b []byte) (Record, error) {
	if len(b) < RecordSize {
		return Record{}, fmt.Errorf("decode fault record: %d bytes, want %d: %w", len(b), RecordSize, ErrInvalid)
	}
	return Record{
		Count:    binary.LittleEndian.Uint32(b[0:]),
		Function: binary.LittleEndian.Uint32(b[4:]),
		Addr:     binary.LittleEndian.Uint64(b[8:]),
		Kinds:    binary.LittleEndian.Uint32(b[16:]),
	}, nil
}

// Encode writes r into the first RecordSize bytes of b.
func (r Record) Encode(b []byte) {
	clear(b[:RecordSize])
	binary.LittleEndian.PutUint32(b[0:], r.Count)
	binary.LittleEndian.PutUint32(b[4:], r.Function)
	binary.LittleEndian.PutUint64(b[8:], r.Addr)
	binary.LittleEndian.PutUint32(b[16:], r.Kinds)
}

// Violated reports whether anything was recorded.
func (r Record) Violated() bool { return r.Count != 0 || r.Kinds != 0 }

// KindString names the kinds in r: "access", "trap", "assert", "call", joined by "+".
func (r Record) KindString() string {
	var ks []string
	for _, k := range []struct {
		bit  uint32
		name string
	}{{KindAccess, "access"}, {KindTrap, "trap"}, {KindAssert, "assert"}, {KindCall, "call"}} {
		if r.Kinds&k.bit != 0 {
			ks = append(ks, k.name)
		}
	}
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, "+")
}
