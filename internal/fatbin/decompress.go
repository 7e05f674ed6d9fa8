package fatbin

import (
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// decodeZstd decodes the zstd frame in src, which must produce exactly size
// bytes. Bytes after the frame (padding) are ignored. Memory grows with the
// output actually produced, never to a size the input merely claims.
func decodeZstd(src []byte, size uint64) ([]byte, error) {
	var hdr zstd.Header
	if err := hdr.Decode(src); err != nil {
		return nil, malformed("zstd frame header: %v", err)
	}
	if hdr.Skippable {
		return nil, malformed("zstd skippable frame instead of data")
	}
	if hdr.HasFCS && hdr.FrameContentSize != size {
		return nil, malformed("zstd frame of %d bytes in an entry of %d", hdr.FrameContentSize, size)
	}
	if hdr.DictionaryID != 0 {
		return nil, fmt.Errorf("zstd dictionary %d: %w", hdr.DictionaryID, ErrUnsupported)
	}
	// The decoder allocates its window before producing output. A window
	// larger than the output is legal but pointless; refusing those keeps
	// the allocation near the (already bounded) declared size.
	limit := max(size, 1<<20)
	dec, err := zstd.NewReader(bytes.NewReader(src),
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(limit),
		zstd.WithDecoderMaxWindow(limit))
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	defer dec.Close()
	var out bytes.Buffer
	// CopyN never asks for more than size bytes, so the padding after the
	// frame is never read as a next frame.
	if _, err := io.CopyN(&out, dec, int64(size)); err != nil {
		if err == io.EOF {
			return nil, malformed("zstd frame ends after %d of %d bytes", out.Len(), size)
		}
		return nil, malformed("zstd: %v", err)
	}
	return out.Bytes(), nil
}

// decodeLZ4 decodes an LZ4 block (no frame) that must produce exactly size
// bytes.
//
// The block is a run of sequences, each a token byte (high nibble: literal
// count, low nibble: match length - 4; a nibble of 15 continues in following
// bytes, each added, until one is not 255), the literals, a 2-byte
// little-endian offset back into the output and the match length's
// continuation. The last sequence has literals only.
func decodeLZ4(src []byte, size uint64) ([]byte, error) {
	out := make([]byte, 0, min(size, uint64(len(src))*4+64))
	pos := 0
	longLength := func(n uint64) (uint64, error) {
		for {
			if pos >= len(src) {
				return 0, malformed("lz4 length runs past the input")
			}
			b := src[pos]
			pos++
			n += uint64(b)
			if n > size {
				return 0, malformed("lz4 length passes the %d-byte output", size)
			}
			if b != 255 {
				return n, nil
			}
		}
	}
	for pos < len(src) {
		token := src[pos]
		pos++
		lits := uint64(token >> 4)
		if lits == 15 {
			var err error
			if lits, err = longLength(lits); err != nil {
				return nil, err
			}
		}
		if lits > uint64(len(src)-pos) {
			return nil, malformed("lz4 literals run past the input")
		}
		if lits > size-uint64(len(out)) {
			return nil, malformed("lz4 output passes %d bytes", size)
		}
		out = append(out, src[pos:pos+int(lits)]...)
		pos += int(lits)
		if pos == len(src) {
			break // the last sequence: literals only
		}
		if len(src)-pos < 2 {
			return nil, malformed("lz4 match offset cut short")
		}
		offset := int(src[pos]) | int(src[pos+1])<<8
		pos += 2
		if offset == 0 || offset > len(out) {
			return nil, malformed("lz4 match offset %d with %d bytes decoded", offset, len(out))
		}
		length := uint64(token&15) + 4
		if length == 15+4 {
			var err error
			if length, err = longLength(length); err != nil {
				return nil, err
			}
		}
		if length > size-uint64(len(out)) {
			return nil, malformed("lz4 output passes %d bytes", size)
		}
		// Byte by byte: a match may overlap the bytes it produces (offset 1
		// repeats the last byte).
		from := len(out) - offset
		for i := range int(length) {
			out = append(out, out[from+i])
		}
	}
	if uint64(len(out)) != size {
		return nil, malformed("lz4 block decodes to %d bytes, entry says %d", len(out), size)
	}
	return out, nil
}
