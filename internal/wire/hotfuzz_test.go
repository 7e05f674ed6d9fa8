package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/api/v1/v1test"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/wire"
)

// FuzzHotConnFrames writes arbitrary messages, as a hostile client could, into
// the submission ring of a HotConn and reads them as requests. ReadFrame must
// never panic or hang; each message that is one whole frame without
// descriptors comes back as that frame (also when read into the memory of
// one before it, given back by Recycle); anything else is Malformed and ends
// the reading.
func FuzzHotConnFrames(f *testing.F) {
	var e v1.Encoder
	var stream []byte
	for i, m := range v1test.Samples() {
		e.Reset()
		if err := e.PutFrame(uint64(i), v1test.Flags(m), m); err != nil {
			f.Fatal(err)
		}
		stream = binary.LittleEndian.AppendUint32(stream, uint32(e.Len()))
		stream = append(stream, e.Bytes()...)
	}
	f.Add(stream)
	f.Add(append(binary.LittleEndian.AppendUint32(nil, 5), "hello"...))
	f.Add(binary.LittleEndian.AppendUint32(nil, 16))
	f.Fuzz(func(t *testing.T, stream []byte) {
		// stream: u32 length, message, u32 length, message...
		var msgs [][]byte
		for len(stream) >= 4 && len(msgs) < 32 {
			n := int(binary.LittleEndian.Uint32(stream))
			stream = stream[4:]
			if n > len(stream) {
				n = len(stream)
			}
			msgs = append(msgs, stream[:n])
			stream = stream[n:]
		}
		if len(msgs) == 0 {
			return
		}
		a, b, err := wire.Pair()
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		hc := wire.NewHotConn(b)
		defer hc.Close()
		const size = 16 << 10
		mem := make([]byte, wire.RingBytes(size, size))
		if err := wire.InitRings(mem, size, size); err != nil {
			t.Fatal(err)
		}
		if err := hc.UseRings(mem, size, size, ring.Options{Spin: -1}, nil); err != nil {
			t.Fatal(err)
		}
		p, err := ring.NewProducer(mem[:ring.Bytes(size)], size, 1<<20, ring.Options{Spin: -1})
		if err != nil {
			t.Fatal(err)
		}
		var sent [][]byte
		room := size / 2 // nobody reads while we write: never wait for room
		for _, m := range msgs {
			if room -= len(m) + 64; room < 0 {
				break
			}
			if err := p.Write(m); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, m)
		}
		for _, m := range sent {
			fr, err := hc.ReadFrame()
			if err != nil {
				if !errors.Is(err, v1.ErrMalformed) {
					t.Fatalf("read: %v, want Malformed", err)
				}
				return
			}
			got := append(fr.Header.Append(nil), fr.Payload...)
			if !bytes.Equal(got, m) {
				t.Fatalf("frame %x read back as %x", m, got)
			}
			if len(m)%2 == 0 {
				hc.Recycle() // the next frame may be read into this one's memory
			}
		}
	})
}
