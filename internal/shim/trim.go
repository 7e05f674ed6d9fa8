package shim

import (
	"encoding/binary"
	"errors"
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/fatbin"
)

// A module image travels to the daemon in one LoadProgram frame, whose payload
// is at most v1.MaxPayload bytes. NVIDIA's libraries carry fat binaries larger
// than that (cuRAND's is 29 MB: a cubin for each of a dozen architectures), of
// which a device can use a few entries. So an image too large to send is cut
// down to those entries, in a fat binary of its own: the cubins that run on the
// device (its architecture's, and older minor versions of the same major one,
// which are binary compatible) and the PTX fatbin.Select would pick. The daemon
// chooses among them as it would have among all of them. Images that fit are
// sent as they are, so that the SHA-256 an operator lists in trusted_modules is
// the image's own.

// loadOverhead is what a LoadProgram frame holds besides the image: the
// image's length, the label and its length.
const loadOverhead = 64

// maxLoadImage is the largest image one LoadProgram can carry with a label of
// n bytes.
func maxLoadImage(n int) int { return v1.MaxPayload - loadOverhead - n }

// Errors returned by trimFatbin.
var (
	errNothingToTrim = errors.New("nothing for the device in the fat binary")
)

// trimFatbin returns a fat binary with the entries of data (a fat binary) that
// a device of compute capability major.minor can use, in their order.
func trimFatbin(data []byte, major, minor int) ([]byte, error) {
	entries, err := fatbin.Parse(data)
	if err != nil {
		return nil, err
	}
	ptx, _ := fatbin.Select(entries, major, minor)
	sm := uint32(major*10 + minor)
	le := binary.LittleEndian
	out := make([]byte, fatbin.HeaderSize, fatbin.HeaderSize+1<<20)
	kept := 0
	for i := range entries {
		e := &entries[i]
		use := e == ptx || (e.Kind == fatbin.KindELF && e.Arch/10 == uint32(major) && e.Arch <= sm)
		if !use {
			continue
		}
		// Parse checked that the entry's header and payload lie in data.
		h := data[e.Offset:]
		span := uint64(le.Uint32(h[4:])) + le.Uint64(h[8:])
		out = append(out, h[:span]...)
		kept++
	}
	if kept == 0 {
		return nil, fmt.Errorf("%w (compute capability %d.%d, %d entries)", errNothingToTrim, major, minor, len(entries))
	}
	le.PutUint32(out, fatbin.Magic)
	le.PutUint16(out[4:], 1)
	le.PutUint16(out[6:], fatbin.HeaderSize)
	le.PutUint64(out[8:], uint64(len(out)-fatbin.HeaderSize))
	return out, nil
}

// fitImage returns the image to send for data on device dv: data itself when
// it fits in a LoadProgram, else the part of a fat binary the device can use.
// An image that cannot be made to fit is CUDA_ERROR_NOT_SUPPORTED, logged.
func (d *Driver) fitImage(dv *device, data []byte, label string) ([]byte, Result) {
	limit := maxLoadImage(len(label))
	if len(data) <= limit {
		return data, cu.CUDA_SUCCESS
	}
	var why string
	if fatbin.IsFatbin(data) {
		t, err := trimFatbin(data, int(dv.info.ComputeMajor), int(dv.info.ComputeMinor))
		switch {
		case err != nil:
			why = err.Error()
		case len(t) > limit:
			why = fmt.Sprintf("the entries for the device are %d bytes", len(t))
		default:
			d.log.Printf("%s: %d-byte fat binary: sending the %d bytes of it that device %d can use", label, len(data), len(t), dv.ordinal)
			return t, cu.CUDA_SUCCESS
		}
	} else {
		why = "not a fat binary, nothing to leave out"
	}
	d.log.Printf("%s: a %d-byte module image is more than gpuos loads at once (%d bytes): %s; returning CUDA_ERROR_NOT_SUPPORTED",
		label, len(data), limit, why)
	return nil, cu.CUDA_ERROR_NOT_SUPPORTED
}
