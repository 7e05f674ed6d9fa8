package wire_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/api/v1/v1test"
	"golang.org/x/sys/unix"
)

// FuzzReadFrame streams arbitrary bytes, cut into arbitrary writes, into a
// Conn. ReadFrame must never panic; the frames it returns, put back together,
// must be exactly a prefix of the stream; and it must end with io.EOF only
// when the whole stream was consumed, else with an error that is Malformed or
// an unexpected EOF.
func FuzzReadFrame(f *testing.F) {
	var e v1.Encoder
	for i, m := range v1test.Samples() {
		if info, _ := v1.Lookup(m.Type()); info.FDs > 0 {
			continue // descriptors cannot come from raw bytes
		}
		if err := e.PutFrame(uint64(i), v1test.Flags(m), m); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(bytes.Clone(e.Bytes()), []byte{3, 17, 200})
	f.Add(e.Bytes()[:40], []byte{1})
	f.Add(v1.Header{Length: v1.MaxPayload + 1}.Append(nil), []byte{})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		if len(stream) > 1<<16 {
			return
		}
		c, peer := rawPair(t)
		done := make(chan struct{})
		defer func() {
			// Stop and join the writer before rawPair's cleanup closes peer:
			// a stray write to a reused descriptor number would corrupt
			// the next run.
			unix.Shutdown(peer, unix.SHUT_RDWR)
			<-done
		}()
		go func() {
			defer close(done)
			rest := stream
			for i := 0; len(rest) > 0; i++ {
				n := len(rest)
				if i < len(cuts) && int(cuts[i]) > 0 && int(cuts[i]) < n {
					n = int(cuts[i])
				}
				if _, err := unix.Write(peer, rest[:n]); err != nil {
					break
				}
				rest = rest[n:]
			}
			unix.Shutdown(peer, unix.SHUT_WR)
		}()
		var got []byte
		for {
			fr, err := c.ReadFrame()
			if err != nil {
				switch {
				case errors.Is(err, io.EOF):
					if !bytes.Equal(got, stream) {
						t.Fatalf("EOF after %d of %d bytes", len(got), len(stream))
					}
				case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, v1.ErrMalformed):
				default:
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(fr.FDs) != 0 || int(fr.Header.Length) != len(fr.Payload) {
				t.Fatalf("frame %+v with %d bytes and %d fds", fr.Header, len(fr.Payload), len(fr.FDs))
			}
			got = append(fr.Header.Append(got), fr.Payload...)
			if !bytes.HasPrefix(stream, got) {
				t.Fatalf("frames read are not a prefix of the stream")
			}
		}
	})
}
