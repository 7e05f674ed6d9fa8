package interp

import (
	"fmt"
	"math"
	"strings"
)

// Device printf: nvcc compiles printf(fmt, ...) into a call of the external
// vprintf(fmt, args), where args points to the arguments packed in local
// memory, each aligned to its size (ints of 4 bytes, longs and pointers of 8,
// floats promoted to double). The interpreter formats them as C does and
// writes each call's text to Launch.Printf in one Write.

// readGeneric reads n (1, 2, 4 or 8) bytes at a generic address.
func (w *worker) readGeneric(t *thread, addr uint64, n int) (uint64, bool) {
	switch {
	case addr-SharedWindow < WindowSize:
		off := addr - SharedWindow
		if off+uint64(n) > uint64(len(w.blk.shared)) || off+uint64(n) < off {
			return 0, false
		}
		return load(w.blk.shared[off:], uint8(n)), true
	case addr-LocalWindow < WindowSize:
		off := addr - LocalWindow
		if off+uint64(n) > uint64(len(t.local)) || off+uint64(n) < off {
			return 0, false
		}
		return load(t.local[off:], uint8(n)), true
	case w.mem != nil:
		b, err := w.mem.Slice(addr, n, false)
		if err != nil || len(b) < n {
			return 0, false
		}
		return load(b, uint8(n)), true
	}
	return 0, false
}

// printf runs one vprintf call: site.args are the format and argument
// pointers, site.rets the int result (the number of arguments, -1 for a null
// format).
func (w *worker) printf(t *thread, site *callSite) {
	arg := func(i int) uint64 {
		a := site.args[i]
		return load(t.pstack[t.pbase+a.off:], uint8(min(a.size, 8)))
	}
	format, args := arg(0), arg(1)
	res := int32(-1)
	if format != 0 {
		text, n := w.formatC(t, w.cString(format), args)
		res = int32(n)
		if out := w.g.l.Printf; out != nil {
			w.g.printMu.Lock()
			_, _ = out.Write([]byte(text))
			w.g.printMu.Unlock()
		}
	}
	if len(site.rets) > 0 {
		r := site.rets[0]
		store(t.pstack[t.pbase+r.off:], uint8(min(r.size, 4)), uint64(uint32(res)))
	}
}

// formatC formats a C format string with arguments packed at args; it
// returns the text and how many arguments it consumed.
func (w *worker) formatC(t *thread, format string, args uint64) (string, int) {
	var b strings.Builder
	off := uint64(0)
	next := func(size int) (uint64, bool) {
		off = (off + uint64(size) - 1) &^ (uint64(size) - 1)
		v, ok := w.readGeneric(t, args+off, size)
		off += uint64(size)
		return v, ok
	}
	n := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		// %[flags][width][.precision][length]conversion
		start := i
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0", format[j]) >= 0 {
			j++
		}
		for j < len(format) && format[j] >= '0' && format[j] <= '9' {
			j++
		}
		hasPrec := false
		if j < len(format) && format[j] == '.' {
			hasPrec = true
			j++
			for j < len(format) && format[j] >= '0' && format[j] <= '9' {
				j++
			}
		}
		spec := format[i+1 : j] // flags, width, precision
		long := 0
		for j < len(format) && strings.IndexByte("hlLqjzt", format[j]) >= 0 {
			switch format[j] {
			case 'l', 'q', 'j', 'z', 't', 'L':
				long++
			}
			j++
		}
		if j >= len(format) {
			b.WriteString(format[i:])
			break
		}
		conv := format[j]
		i = j
		size := 4
		if long > 0 {
			size = 8
		}
		switch conv {
		case '%':
			b.WriteByte('%')
			continue
		case 'd', 'i', 'u', 'x', 'X', 'o', 'c':
			v, ok := next(size)
			if !ok {
				b.WriteString("<bad argument>")
				continue
			}
			n++
			switch conv {
			case 'd', 'i':
				x := int64(v)
				if size == 4 {
					x = int64(int32(v))
				}
				fmt.Fprintf(&b, "%"+spec+"d", x)
			case 'u':
				fmt.Fprintf(&b, "%"+spec+"d", zextW(v, 8*size))
			case 'c':
				fmt.Fprintf(&b, "%"+spec+"c", rune(byte(v)))
			default:
				fmt.Fprintf(&b, "%"+spec+string(conv), zextW(v, 8*size))
			}
		case 'f', 'F', 'e', 'E', 'g', 'G':
			v, ok := next(8)
			if !ok {
				b.WriteString("<bad argument>")
				continue
			}
			n++
			x := math.Float64frombits(v)
			if math.IsInf(x, 0) || x != x {
				s := "inf"
				if x != x {
					s = "nan"
				} else if x < 0 {
					s = "-inf"
				}
				if conv >= 'A' && conv <= 'Z' {
					s = strings.ToUpper(s)
				}
				fmt.Fprintf(&b, "%"+strings.Trim(spec, "0#")+"s", s)
				continue
			}
			if !hasPrec {
				spec += ".6"
			}
			if conv == 'F' {
				conv = 'f'
			}
			fmt.Fprintf(&b, "%"+spec+string(conv), x)
		case 's':
			v, ok := next(8)
			if !ok {
				b.WriteString("<bad argument>")
				continue
			}
			n++
			s := "(null)"
			if v != 0 {
				s = w.cString(v)
			}
			fmt.Fprintf(&b, "%"+spec+"s", s)
		case 'p':
			v, ok := next(8)
			if !ok {
				b.WriteString("<bad argument>")
				continue
			}
			n++
			fmt.Fprintf(&b, "%"+spec+"s", fmt.Sprintf("0x%x", v))
		default:
			b.WriteString(format[start : j+1])
		}
	}
	return b.String(), n
}
