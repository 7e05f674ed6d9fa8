package v1_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/api/v1/v1test"
)

// FuzzDecodeFrame feeds arbitrary bytes as a whole frame through the table's
// decoders. It must never panic, every error must be Malformed or (for an
// unknown type) Unsupported, and whatever decodes must re-encode to the same
// bytes.
func FuzzDecodeFrame(f *testing.F) {
	var e v1.Encoder
	for i, m := range v1test.Samples() {
		e.Reset()
		if err := e.PutFrame(uint64(i), v1test.Flags(m), m); err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.Clone(e.Bytes()))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, m, err := v1.DecodeFrame(frame)
		if err != nil {
			if !errors.Is(err, v1.ErrMalformed) && !errors.Is(err, v1.ErrUnsupported) {
				t.Fatalf("error %v is neither Malformed nor Unsupported", err)
			}
			return
		}
		var e v1.Encoder
		if err := e.PutFrame(h.ID, h.Flags, m); err != nil {
			t.Fatalf("decoded %v does not re-encode: %v", h.Type, err)
		}
		if !bytes.Equal(e.Bytes(), frame) {
			t.Fatalf("%v re-encodes differently\nin  %x\nout %x", h.Type, frame, e.Bytes())
		}
	})
}

// FuzzDecodeMessage decodes a payload as a chosen type (the first two bytes),
// skipping the header checks so that every type's decoder gets the fuzzer's
// full attention.
func FuzzDecodeMessage(f *testing.F) {
	for _, m := range v1test.Samples() {
		f.Add(binary.LittleEndian.AppendUint16(nil, uint16(m.Type())), v1.Marshal(m))
	}
	f.Fuzz(func(t *testing.T, typ, payload []byte) {
		if len(typ) != 2 {
			return
		}
		info, ok := v1.Lookup(v1.Type(binary.LittleEndian.Uint16(typ)))
		if !ok {
			return
		}
		m := info.New()
		if err := v1.Unmarshal(payload, m); err != nil {
			if !errors.Is(err, v1.ErrMalformed) {
				t.Fatalf("%v: error %v is not Malformed", info.Type, err)
			}
			return
		}
		if out := v1.Marshal(m); !bytes.Equal(out, payload) {
			t.Fatalf("%v re-encodes differently\nin  %x\nout %x", info.Type, payload, out)
		}
	})
}
