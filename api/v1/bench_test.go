package v1_test

import (
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

func benchLaunch() *v1.Launch {
	return &v1.Launch{Kernel: 12, Stream: 13, Grid: [3]uint32{1024, 1, 1}, Block: [3]uint32{256, 1, 1}, Params: make([]byte, 32)}
}

func BenchmarkEncodeLaunch(b *testing.B) {
	m := benchLaunch()
	enc := v1.NewEncoder(make([]byte, 0, 256))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		enc.Reset()
		if err := enc.PutFrame(uint64(i), v1.FlagNoReply, m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeLaunch(b *testing.B) {
	var enc v1.Encoder
	if err := enc.PutFrame(1, v1.FlagNoReply, benchLaunch()); err != nil {
		b.Fatal(err)
	}
	payload := enc.Bytes()[v1.HeaderSize:]
	var m v1.Launch
	var d v1.Decoder
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(payload)
		if err := d.Decode(&m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeMemcpyHtoD4K(b *testing.B) {
	m := &v1.Memcpy{Stream: 1, Dir: v1.DirHtoD, Dst: v1.Ref{Buffer: 9}, Size: 4096, Data: make([]byte, 4096)}
	enc := v1.NewEncoder(make([]byte, 0, 8192))
	b.SetBytes(4096)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		enc.Reset()
		if err := enc.PutFrame(uint64(i), v1.FlagNoReply, m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeMemcpyHtoD4K(b *testing.B) {
	var enc v1.Encoder
	m := &v1.Memcpy{Stream: 1, Dir: v1.DirHtoD, Dst: v1.Ref{Buffer: 9}, Size: 4096, Data: make([]byte, 4096)}
	if err := enc.PutFrame(1, v1.FlagNoReply, m); err != nil {
		b.Fatal(err)
	}
	payload := enc.Bytes()[v1.HeaderSize:]
	var got v1.Memcpy
	var d v1.Decoder
	b.SetBytes(4096)
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(payload)
		if err := d.Decode(&got); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEncodeLaunchDoesNotAllocate holds the hot path to zero allocations.
func TestEncodeLaunchDoesNotAllocate(t *testing.T) {
	m := benchLaunch()
	enc := v1.NewEncoder(make([]byte, 0, 256))
	var d v1.Decoder
	var got v1.Launch
	allocs := testing.AllocsPerRun(100, func() {
		enc.Reset()
		if err := enc.PutFrame(1, v1.FlagNoReply, m); err != nil {
			t.Fatal(err)
		}
		d.Reset(enc.Bytes()[v1.HeaderSize:])
		if err := d.Decode(&got); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("encoding and decoding a Launch allocates %v times, want 0", allocs)
	}
}
