package sim

import (
	"bytes"
	"fmt"

	"github.com/gpuos/gpuos/internal/fatbin"
)

// ptxFromImage classifies a module image and returns its PTX text.
func ptxFromImage(image []byte) ([]byte, error) {
	switch {
	case len(image) == 0:
		return nil, fmt.Errorf("empty image: %w", ErrInvalidImage)
	case fatbin.IsELF(image):
		return nil, fmt.Errorf("cubin: %w", ErrSASS)
	case fatbin.IsFatbin(image):
		return ptxFromFatbin(image)
	case fatbin.IsWrapper(image):
		return nil, fmt.Errorf("a fatbin wrapper (pass the fatbin it points to): %w", ErrInvalidImage)
	}
	text := bytes.TrimRight(image, "\x00")
	if !fatbin.IsPTX(text) || bytes.IndexByte(text, 0) >= 0 {
		return nil, ErrInvalidImage
	}
	return text, nil
}

// ptxFromFatbin extracts the best PTX of a fatbin for the sim's sm_90: the
// highest architecture not above it, then the highest PTX ISA version.
func ptxFromFatbin(image []byte) ([]byte, error) {
	entries, err := fatbin.Parse(image)
	if err != nil {
		return nil, err
	}
	ptx, _ := fatbin.Select(entries, 9, 0)
	if ptx == nil {
		return nil, fmt.Errorf("fatbin of %d entries has no PTX for sm_90 or lower: %w", len(entries), ErrSASS)
	}
	text, err := ptx.Payload()
	if err != nil {
		return nil, fmt.Errorf("fatbin entry %v: %w", ptx, err)
	}
	text = bytes.TrimRight(text, "\x00")
	if !fatbin.IsPTX(text) || bytes.IndexByte(text, 0) >= 0 {
		return nil, fmt.Errorf("fatbin entry %v does not hold PTX text: %w", ptx, ErrInvalidImage)
	}
	return text, nil
}
