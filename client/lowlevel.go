package client

import (
	"context"
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Calls that the CUDA driver shim (internal/shim) needs beyond the rest of the
// API: CUDA's synchronous copies return only once the copy has completed.

// CopyToDeviceSync copies src to dst on a stream (nil: the default stream),
// after the stream's earlier work, and returns once the copy has completed on
// the device, with its error.
func (s *Session) CopyToDeviceSync(ctx context.Context, dst Ref, src []byte, st *Stream) error {
	for off := 0; off < len(src); off += chunk {
		n := min(len(src)-off, chunk)
		err := s.call(ctx, &v1.Memcpy{Stream: streamHandle(st), Dir: v1.DirHtoD, Dst: dst.wire(uint64(off)),
			Size: uint64(n), Data: src[off : off+n]}, nil)
		if err != nil {
			return fmt.Errorf("copy to device: %w", err)
		}
	}
	return nil
}
