package v1_test

import (
	"encoding/hex"
	"errors"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// The hot path's messages have a fixed layout; these are their bytes.
func TestHotPathEncoding(t *testing.T) {
	tests := []struct {
		m    v1.Message
		want string
	}{
		{&v1.OpenRing{SubmitBytes: 0x80000, CompleteBytes: 0x40000}, "0000080000000400"},
		{&v1.RingOpened{SubmitBytes: 1, CompleteBytes: 2, SpinNs: 2000000}, "0100000002000000" + "80841e0000000000"},
		{&v1.OpenStaging{Bytes: 1 << 26, SlotBytes: 1 << 22}, "0000000400000000" + "0000400000000000"},
		{&v1.StagingOpened{Slots: 16, SlotBytes: 1 << 22}, "10000000" + "0000400000000000"},
		{&v1.StagedCopy{Stream: 13, Dir: v1.DirDtoH, Dev: v1.Ref{Buffer: 9, Offset: 4}, Offset: 8, Size: 16, Gen: 7, Wait: true},
			"0d00000000000000" + "02" + "0900000000000000" + "0400000000000000" + "0800000000000000" + "1000000000000000" + "07000000" + "01"},
		{&v1.MapHost{Bytes: 1 << 20}, "0000100000000000"},
		{&v1.HostMapped{Handle: 3, Bytes: 4096}, "0300000000000000" + "0010000000000000"},
		{&v1.UnmapHost{Handle: 3}, "0300000000000000"},
		{&v1.HostCopy{Stream: 1, Dir: v1.DirHtoD, Dev: v1.Ref{Buffer: 9}, Host: 3, Offset: 8, Size: 16},
			"0100000000000000" + "01" + "0900000000000000" + "0000000000000000" + "0300000000000000" + "0800000000000000" + "1000000000000000"},
		{&v1.OpenCompletion{}, ""},
		{&v1.CompletionOpened{Bytes: 8192, Words: 64, WordStride: 64, FaultsOffset: 4096, FaultsBytes: 4096, SpinNs: 1000},
			"00200000" + "40000000" + "40000000" + "00100000" + "00100000" + "e803000000000000"},
		{&v1.SynchronizeFences{Stream: 5}, "0500000000000000"},
		{&v1.FenceTargets{Targets: []v1.FenceTarget{{Word: 2, Seq: 9}}}, "01000000" + "02000000" + "09000000"},
		{&v1.FenceTargets{}, "00000000"},
		{&v1.WatchLaunches{}, ""},
	}
	for _, tt := range tests {
		if have := hex.EncodeToString(v1.Marshal(tt.m)); have != tt.want {
			t.Errorf("%v: have %s, want %s", tt.m.Type(), have, tt.want)
		}
	}
}

func TestStagedCopyDecodeRefuses(t *testing.T) {
	good := &v1.StagedCopy{Dir: v1.DirHtoD, Size: 1, Wait: false}
	tests := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"device to device", func(b []byte) []byte { b[8] = byte(v1.DirDtoD); return b }},
		{"unknown direction", func(b []byte) []byte { b[8] = 9; return b }},
		{"wait not a bool", func(b []byte) []byte { b[len(b)-1] = 2; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }},
	}
	for _, tt := range tests {
		err := v1.Unmarshal(patch(good, tt.edit), new(v1.StagedCopy))
		if !errors.Is(err, v1.ErrMalformed) {
			t.Errorf("%s: %v, want Malformed", tt.name, err)
		}
	}
	host := &v1.HostCopy{Dir: v1.DirHtoD, Size: 1}
	for _, dir := range []byte{0, byte(v1.DirDtoD), 9} {
		err := v1.Unmarshal(patch(host, func(b []byte) []byte { b[8] = dir; return b }), new(v1.HostCopy))
		if !errors.Is(err, v1.ErrMalformed) {
			t.Errorf("host copy direction %d: %v, want Malformed", dir, err)
		}
	}
}

func TestHotPathAdmit(t *testing.T) {
	copyOnly := v1.RightCopy
	noCopy := v1.AllSessionRights &^ v1.RightCopy
	h := func(typ v1.Type, f v1.Flags) v1.Header { return v1.Header{Type: typ, Flags: f, ID: 1} }
	tests := []struct {
		name string
		have v1.Rights
		h    v1.Header
		want error
	}{
		{"open ring needs no right", 0, h(v1.TypeOpenRing, 0), nil},
		{"open staging", copyOnly, h(v1.TypeOpenStaging, 0), nil},
		{"open staging without copy", noCopy, h(v1.TypeOpenStaging, 0), v1.ErrPermissionDenied},
		{"staged copy without copy", noCopy, h(v1.TypeStagedCopy, 0), v1.ErrPermissionDenied},
		{"staged copy is answered", copyOnly, h(v1.TypeStagedCopy, v1.FlagNoReply), v1.ErrMalformed},
		{"ring opened carries a descriptor", copyOnly, h(v1.TypeOpenRing, v1.Flags(0).WithFDs(1)), v1.ErrMalformed},
		{"map host", copyOnly, h(v1.TypeMapHost, 0), nil},
		{"map host without copy", noCopy, h(v1.TypeMapHost, 0), v1.ErrPermissionDenied},
		{"unmap host needs no right", 0, h(v1.TypeUnmapHost, 0), nil},
		{"async host copy", copyOnly, h(v1.TypeHostCopy, v1.FlagNoReply), nil},
		{"host copy without copy", noCopy, h(v1.TypeHostCopy, v1.FlagNoReply), v1.ErrPermissionDenied},
	}
	for _, tt := range tests {
		_, err := v1.Admit(v1.EndpointDriver, tt.have, tt.h)
		if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: Admit = %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := v1.CheckHeader(v1.Header{Type: v1.TypeRingOpened, Flags: v1.FlagReply}); !errors.Is(err, v1.ErrMalformed) {
		t.Errorf("RingOpened without its descriptor: %v", err)
	}
	if _, err := v1.CheckHeader(v1.Header{Type: v1.TypeStagingOpened, Flags: v1.FlagReply.WithFDs(1)}); err != nil {
		t.Errorf("StagingOpened with its descriptor: %v", err)
	}
}
