package fatbin

import (
	"bytes"
	"debug/elf"
	"io"
)

// elfVersionOff is where an ELF header's e_version word starts, in 32- and
// 64-bit files alike.
const elfVersionOff = 20

// NewELFFile opens a cubin with debug/elf. NVIDIA's tools write the CUDA
// version into the header's e_version word (cuBLAS 13's kernels: 123, run 8),
// where the ELF standard has 1 and debug/elf refuses anything else, so the
// file is read as if that word were 1; every other byte is read as it is.
func NewELFFile(data []byte) (*elf.File, error) {
	return elf.NewFile(versionOne{bytes.NewReader(data)})
}

// versionOne reads through r, with the e_version word read as 1.
type versionOne struct{ r io.ReaderAt }

func (v versionOne) ReadAt(p []byte, off int64) (int, error) {
	n, err := v.r.ReadAt(p, off)
	for i := range 4 {
		if at := elfVersionOff + int64(i) - off; at >= 0 && at < int64(n) {
			p[at] = 0
			if i == 0 {
				p[at] = 1 // little-endian, as every cubin is
			}
		}
	}
	return n, err
}
