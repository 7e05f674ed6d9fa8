package shim

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// The full call trace (GPUOS_SHIM_TRACE=2) logs every call of every exported
// entry point with its arguments and result. cmd/libcuda captures the
// argument registers of each call (x86-64: six integer registers, eight
// vector registers, then the stack) and FormatCall turns them into a line,
// using the parameter list the generator took from include/cuda.h:
//
//	cuDeviceGetAttribute(pi=&132, attrib=16, dev=0) = CUDA_SUCCESS
//
// A parameter list is one "K name" per parameter, comma-separated, where K
// says how to show the value:
//
//	i u        a 32-bit integer, signed or not
//	x z        a 64-bit value in hex (handles, device pointers); a size in decimal
//	f d        a float or a double (passed in vector registers)
//	p          a pointer the callee reads: its address
//	s          a NUL-terminated string the callee reads
//	U          a CUuuid the callee reads: 32 hex digits
//	I X Z F    a pointer the callee writes an int, an 8-byte value, a size
//	           or a float through: shown after a successful call as &value
//	C T V      a buffer the callee writes a string into, a const char ** it
//	           points at a string, a CUuuid it fills: shown after success
//
// Entry points without a parameter list (those include/cuda.h does not
// declare) show their six integer argument registers in hex.

// CallArgs are the argument registers of one call.
type CallArgs struct {
	GP    [6]uint64 // rdi, rsi, rdx, rcx, r8, r9
	XMM   [8]uint64 // the low 64 bits of xmm0-xmm7
	Stack [6]uint64 // the first stack arguments
}

// Memory reads the application's memory for the call trace: ok is false if
// the bytes at addr cannot be read. The trace never reads through a pointer
// any other way.
type Memory interface {
	Read(addr uint64, p []byte) bool
}

// maxTraceString bounds the strings the trace shows.
const maxTraceString = 96

// FormatCall appends the trace line of a call of name to b: its arguments a
// shown as parameter list sig says (known is false when there is none) and
// its result r (the raw return register).
func FormatCall(b []byte, name, sig string, known bool, a *CallArgs, r uint64, mem Memory) []byte {
	b = append(b, name...)
	b = append(b, '(')
	res := cu.CUresult(uint32(r))
	ok := res == cu.CUDA_SUCCESS
	if !known {
		for i, v := range a.GP {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendHex(b, v)
		}
	} else {
		gp, xmm, st := 0, 0, 0
		nextGP := func() uint64 {
			if gp < len(a.GP) {
				gp++
				return a.GP[gp-1]
			}
			st++
			if st <= len(a.Stack) {
				return a.Stack[st-1]
			}
			return 0
		}
		nextXMM := func() uint64 {
			if xmm < len(a.XMM) {
				xmm++
				return a.XMM[xmm-1]
			}
			st++
			if st <= len(a.Stack) {
				return a.Stack[st-1]
			}
			return 0
		}
		for i, p := range strings.Split(sig, ",") {
			if p == "" {
				continue
			}
			if i > 0 {
				b = append(b, ", "...)
			}
			kind, pname := byte('x'), p
			if k, n, found := strings.Cut(p, " "); found && len(k) == 1 {
				kind, pname = k[0], n
			}
			b = append(b, pname...)
			b = append(b, '=')
			if kind == 'f' || kind == 'd' {
				v := nextXMM()
				if kind == 'f' {
					b = strconv.AppendFloat(b, float64(math.Float32frombits(uint32(v))), 'g', -1, 32)
				} else {
					b = strconv.AppendFloat(b, math.Float64frombits(v), 'g', -1, 64)
				}
				continue
			}
			b = appendArg(b, kind, nextGP(), ok, mem)
		}
	}
	b = append(b, ") = "...)
	if n := res.Name(); n != "" {
		return append(b, n...)
	}
	return appendHex(b, r&0xffffffff)
}

func appendHex(b []byte, v uint64) []byte {
	b = append(b, "0x"...)
	return strconv.AppendUint(b, v, 16)
}

func appendArg(b []byte, kind byte, v uint64, ok bool, mem Memory) []byte {
	switch kind {
	case 'i':
		return strconv.AppendInt(b, int64(int32(v)), 10)
	case 'u':
		return strconv.AppendUint(b, uint64(uint32(v)), 10)
	case 'z':
		return strconv.AppendUint(b, v, 10)
	case 's':
		return appendString(b, v, mem)
	case 'U':
		return appendUUID(b, v, mem)
	}
	out := strings.IndexByte("IXZFCTV", kind) >= 0
	if !out {
		return appendHex(b, v)
	}
	if v == 0 {
		return append(b, "NULL"...)
	}
	if !ok {
		return appendHex(b, v)
	}
	b = append(b, '&')
	var w [8]byte
	switch kind {
	case 'I', 'F':
		if !mem.Read(v, w[:4]) {
			return append(b, '?')
		}
		u := binary.LittleEndian.Uint32(w[:4])
		if kind == 'F' {
			return strconv.AppendFloat(b, float64(math.Float32frombits(u)), 'g', -1, 32)
		}
		return strconv.AppendInt(b, int64(int32(u)), 10)
	case 'X', 'Z':
		if !mem.Read(v, w[:]) {
			return append(b, '?')
		}
		u := binary.LittleEndian.Uint64(w[:])
		if kind == 'Z' {
			return strconv.AppendUint(b, u, 10)
		}
		return appendHex(b, u)
	case 'C':
		return appendString(b, v, mem)
	case 'T':
		if !mem.Read(v, w[:]) {
			return append(b, '?')
		}
		return appendString(b, binary.LittleEndian.Uint64(w[:]), mem)
	case 'V':
		return appendUUID(b, v, mem)
	}
	return appendHex(b, v)
}

// appendString shows the string at addr, quoted and cut at maxTraceString
// bytes.
func appendString(b []byte, addr uint64, mem Memory) []byte {
	if addr == 0 {
		return append(b, "NULL"...)
	}
	// One read of the whole bound, or byte by byte when that crosses into
	// memory that cannot be read.
	var buf [maxTraceString]byte
	n := len(buf)
	if !mem.Read(addr, buf[:]) {
		for n = 0; n < len(buf); n++ {
			if !mem.Read(addr+uint64(n), buf[n:n+1]) {
				break
			}
			if buf[n] == 0 {
				n++
				break
			}
		}
		if n == 0 {
			return appendHex(append(b, '?'), addr)
		}
	}
	s := buf[:n]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		return strconv.AppendQuote(b, string(s[:i]))
	}
	return append(strconv.AppendQuote(b, string(s)), "..."...)
}

func appendUUID(b []byte, addr uint64, mem Memory) []byte {
	var u [16]byte
	if addr == 0 {
		return append(b, "NULL"...)
	}
	if !mem.Read(addr, u[:]) {
		return appendHex(append(b, '?'), addr)
	}
	return hex.AppendEncode(b, u[:])
}
