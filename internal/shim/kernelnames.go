package shim

import (
	"bytes"
	"debug/elf"

	"github.com/gpuos/gpuos/internal/fatbin"
)

// stoCUDAEntry marks, in a cubin symbol's st_other, a function that is a
// kernel entry (a __global__ function) rather than a device function.
const stoCUDAEntry = 0x10

// imageKernels lists the kernels a module image defines, as a device of
// compute capability major.minor would load it, without loading it: the
// .entry directives of PTX, the entry functions of a cubin, and for a fat
// binary those of the entry the device would use (its cubin, else its best
// PTX). ok is false when the image does not say (no entry for the device, an
// ELF without a symbol table, a payload that does not decompress): the
// daemon must then be asked. Names appear once each, in the image's order.
func imageKernels(data []byte, major, minor int) (names []string, ok bool) {
	switch {
	case fatbin.IsFatbin(data):
		entries, err := fatbin.Parse(data)
		if err != nil {
			return nil, false
		}
		ptx, cubin := fatbin.Select(entries, major, minor)
		e := cubin
		if e == nil {
			e = ptx
		}
		if e == nil {
			return nil, false
		}
		p, err := e.Payload()
		if err != nil || fatbin.IsFatbin(p) {
			return nil, false // no nesting: a payload is PTX or a cubin
		}
		return imageKernels(p, major, minor)
	case fatbin.IsELF(data):
		return cubinKernels(data)
	case fatbin.IsPTX(data):
		return ptxEntries(data), true
	}
	return nil, false
}

// cubinKernels lists a cubin's entry functions.
func cubinKernels(data []byte) (names []string, ok bool) {
	// debug/elf reads untrusted files without panicking as far as its
	// fuzzing found; should one slip through, the image merely does not say.
	defer func() {
		if recover() != nil {
			names, ok = nil, false
		}
	}()
	f, err := fatbin.NewELFFile(data)
	if err != nil {
		return nil, false
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil, false
	}
	seen := make(map[string]bool)
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Other&stoCUDAEntry == 0 || s.Name == "" || seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		names = append(names, s.Name)
	}
	return names, true
}

// ptxEntries lists the names of a PTX text's .entry directives. Line
// comments are skipped; the name is what follows .entry up to a '(', a '{',
// a ';' or white space.
func ptxEntries(text []byte) []string {
	var names []string
	seen := make(map[string]bool)
	for line := range bytes.Lines(text) {
		if i := bytes.Index(line, []byte("//")); i >= 0 {
			line = line[:i]
		}
		for {
			i := bytes.Index(line, []byte(".entry"))
			if i < 0 {
				break
			}
			before := i == 0 || isPTXSpace(line[i-1])
			line = line[i+len(".entry"):]
			if !before || len(line) == 0 || !isPTXSpace(line[0]) {
				continue
			}
			line = bytes.TrimLeft(line, " \t\r\n")
			n := bytes.IndexFunc(line, func(r rune) bool {
				return r == '(' || r == '{' || r == ';' || r < 0x80 && isPTXSpace(byte(r))
			})
			if n < 0 {
				n = len(line)
			}
			if name := string(line[:n]); n > 0 && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
			line = line[n:]
		}
	}
	return names
}

func isPTXSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
