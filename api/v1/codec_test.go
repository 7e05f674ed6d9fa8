package v1_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/api/v1/v1test"
)

func newOf(t testing.TB, typ v1.Type) v1.Message {
	t.Helper()
	info, ok := v1.Lookup(typ)
	if !ok {
		t.Fatalf("no table row for %v", typ)
	}
	return info.New()
}

func TestRoundTripPayload(t *testing.T) {
	for _, m := range v1test.Samples() {
		payload := v1.Marshal(m)
		got := newOf(t, m.Type())
		if err := v1.Unmarshal(payload, got); err != nil {
			t.Errorf("%v: Unmarshal: %v", m.Type(), err)
			continue
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%v: round trip\nhave %+v\nwant %+v", m.Type(), got, m)
		}
		if again := v1.Marshal(got); !bytes.Equal(again, payload) {
			t.Errorf("%v: re-encoding differs", m.Type())
		}
	}
}

func TestRoundTripFrame(t *testing.T) {
	var e v1.Encoder
	for i, m := range v1test.Samples() {
		e.Reset()
		id := uint64(i)<<32 | 0xabc
		if err := e.PutFrame(id, v1test.Flags(m), m); err != nil {
			t.Fatalf("%v: PutFrame: %v", m.Type(), err)
		}
		h, got, err := v1.DecodeFrame(e.Bytes())
		if err != nil {
			t.Fatalf("%v: DecodeFrame: %v", m.Type(), err)
		}
		want := v1.Header{Length: uint32(e.Len() - v1.HeaderSize), Type: m.Type(), Flags: v1test.Flags(m), ID: id}
		if h != want {
			t.Errorf("%v: header %+v, want %+v", m.Type(), h, want)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%v: round trip\nhave %+v\nwant %+v", m.Type(), got, m)
		}
	}
}

// Every proper prefix of every payload must be refused, and so must one extra byte.
func TestTruncatedAndTrailing(t *testing.T) {
	for _, m := range v1test.Samples() {
		payload := v1.Marshal(m)
		for n := 0; n < len(payload); n++ {
			if err := v1.Unmarshal(payload[:n], newOf(t, m.Type())); !errors.Is(err, v1.ErrMalformed) {
				t.Fatalf("%v truncated to %d of %d bytes: %v, want Malformed", m.Type(), n, len(payload), err)
			}
		}
		if err := v1.Unmarshal(append(payload, 0), newOf(t, m.Type())); !errors.Is(err, v1.ErrMalformed) {
			t.Errorf("%v with a trailing byte: %v, want Malformed", m.Type(), err)
		}
	}
}

// patch encodes m and lets edit change the payload.
func patch(m v1.Message, edit func([]byte) []byte) []byte { return edit(v1.Marshal(m)) }

func TestMalformedPayloads(t *testing.T) {
	tests := []struct {
		name    string
		typ     v1.Type
		payload []byte
		errText string
	}{
		{"hello magic", v1.TypeHello, patch(v1.NewHello(v1.RoleClient, "", ""), func(b []byte) []byte { b[0] = 'X'; return b }), "magic"},
		{"hello role 0", v1.TypeHello, patch(v1.NewHello(v1.RoleClient, "", ""), func(b []byte) []byte { b[len(b)-5] = 0; return b }), "role"},
		{"hello role 3", v1.TypeHello, patch(v1.NewHello(v1.RoleClient, "", ""), func(b []byte) []byte { b[len(b)-5] = 3; return b }), "role"},
		{"memcpy dir 0", v1.TypeMemcpy, v1.Marshal(&v1.Memcpy{}), "direction"},
		{"memcpy dir 4", v1.TypeMemcpy, v1.Marshal(&v1.Memcpy{Dir: 4}), "direction"},
		{"memcpy HtoD short data", v1.TypeMemcpy, v1.Marshal(&v1.Memcpy{Dir: v1.DirHtoD, Size: 5, Data: []byte{1}}), "HtoD"},
		{"memcpy DtoH with data", v1.TypeMemcpy, v1.Marshal(&v1.Memcpy{Dir: v1.DirDtoH, Size: 1, Data: []byte{1}}), "carries"},
		{"memset elem 3", v1.TypeMemset, v1.Marshal(&v1.Memset{ElemSize: 3}), "element size"},
		{"memset elem 0", v1.TypeMemset, v1.Marshal(&v1.Memset{}), "element size"},
		{"restrict unknown right", v1.TypeRestrict, v1.Marshal(&v1.Restrict{Rights: 1 << 40}), "rights"},
		{"restrict buffer right", v1.TypeRestrict, v1.Marshal(&v1.Restrict{Rights: v1.RightBufferRead}), "rights"},
		{"grant session right", v1.TypeGrant, v1.Marshal(&v1.Grant{Rights: v1.RightLaunch}), "rights"},
		{"open session unknown right", v1.TypeOpenSession, v1.Marshal(&v1.OpenSession{Rights: 1 << 6}), "rights"},
		{"error code 0", v1.TypeError, v1.Marshal(&v1.Error{Message: "x"}), "code 0"},
		{"string longer than frame", v1.TypeGetKernel, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 'a'}, "truncated"},
		{"kernels count cannot fit", v1.TypeProgramLoaded, []byte{0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, "cannot fit"},
		{"huge session count", v1.TypeSessions, []byte{0xff, 0xff, 0xff, 0xff}, "cannot fit"},
		{"huge device count", v1.TypeDevices, append([]byte{0xff, 0xff, 0xff, 0x0f}, make([]byte, 100)...), "cannot fit"},
		{"empty with a byte", v1.TypeEmpty, []byte{0}, "trailing"},
		{"shm get unknown flag", v1.TypeShmGet, v1.Marshal(&v1.ShmGet{Flags: 1 << 5}), "shm flags"},
		{"shm ctl op 0", v1.TypeShmCtl, v1.Marshal(&v1.ShmCtl{}), "shm op"},
		{"shm ctl op 4", v1.TypeShmCtl, v1.Marshal(&v1.ShmCtl{Op: 4}), "shm op"},
		{"shm ctl session right", v1.TypeShmCtl, v1.Marshal(&v1.ShmCtl{Op: v1.ShmAllow, Rights: v1.RightLaunch}), "rights"},
		{"shm segment session right", v1.TypeShmSegment, v1.Marshal(&v1.ShmSegment{Rights: v1.RightAlloc}), "rights"},
		{"shm stat access right", v1.TypeShmStat, v1.Marshal(&v1.ShmStat{Allowed: []v1.ShmAccess{{Rights: 1 << 40}}}), "rights"},
		{"shm stat count cannot fit", v1.TypeShmStat, append(v1.Marshal(&v1.ShmStat{})[:25], 0xff, 0xff, 0, 0), "cannot fit"},
		{"session stat without swap counters", v1.TypeSessionStat, v1.Marshal(&v1.SessionStat{})[:len(v1.Marshal(&v1.SessionStat{}))-16], "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v1.Unmarshal(tt.payload, newOf(t, tt.typ))
			if !errors.Is(err, v1.ErrMalformed) || !strings.Contains(err.Error(), tt.errText) {
				t.Fatalf("Unmarshal = %v, want Malformed mentioning %q", err, tt.errText)
			}
		})
	}
}

func TestDecoderPrimitives(t *testing.T) {
	var e v1.Encoder
	e.PutBool(true)
	e.PutBool(false)
	e.PutInt64(-2)
	e.PutUint32x3([3]uint32{1, 2, 3})
	e.PutBytes(nil)
	e.PutString("")
	d := v1.NewDecoder(e.Bytes())
	if b1, b2, i, a := d.Bool(), d.Bool(), d.Int64(), d.Uint32x3(); !b1 || b2 || i != -2 || a != [3]uint32{1, 2, 3} {
		t.Errorf("decoded %v %v %v %v", b1, b2, i, a)
	}
	if b, s := d.Bytes(), d.Text(); b != nil || s != "" {
		t.Errorf("empty bytes and string decoded as %v %q", b, s)
	}
	if err := d.Finish(); err != nil {
		t.Errorf("Finish: %v", err)
	}

	d.Reset([]byte{2, 1})
	if d.Bool(); !errors.Is(d.Err(), v1.ErrMalformed) {
		t.Errorf("bool 2: %v, want Malformed", d.Err())
	}
	if v := d.Uint8(); v != 0 {
		t.Errorf("read after error returned %d, want 0", v)
	}
	if d.Remaining() != 0 {
		t.Errorf("Remaining after error = %d", d.Remaining())
	}
}

func TestParseHeader(t *testing.T) {
	hdr := func(length uint32, typ v1.Type, flags v1.Flags) []byte {
		return v1.Header{Length: length, Type: typ, Flags: flags, ID: 5}.Append(nil)
	}
	tests := []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"request", hdr(0, v1.TypeLaunch, 0), true},
		{"max payload", hdr(v1.MaxPayload, v1.TypeLaunch, 0), true},
		{"oversized", hdr(v1.MaxPayload+1, v1.TypeLaunch, 0), false},
		{"unknown flag bit", hdr(0, v1.TypeLaunch, 1<<7), false},
		{"top flag bit", hdr(0, v1.TypeLaunch, 1<<15), false},
		{"reply and noreply", hdr(0, v1.TypeEmpty, v1.FlagReply|v1.FlagNoReply), false},
		{"error without reply", hdr(0, v1.TypeError, v1.FlagError), false},
		{"fifteen fds", hdr(0, v1.TypeLaunch, v1.Flags(0).WithFDs(15)), true},
		{"short", hdr(0, v1.TypeLaunch, 0)[:15], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := v1.ParseHeader(tt.b)
			if tt.ok != (err == nil) {
				t.Fatalf("ParseHeader = %+v, %v; want ok=%v", h, err, tt.ok)
			}
			if err != nil && !errors.Is(err, v1.ErrMalformed) {
				t.Fatalf("error %v is not Malformed", err)
			}
			if err == nil && !bytes.Equal(h.Append(nil), tt.b) {
				t.Fatalf("header does not re-encode to its bytes")
			}
		})
	}
	// An oversized header still reports its ID, so the server can answer it.
	h, err := v1.ParseHeader(hdr(1<<30, v1.TypeBufferWrite, 0))
	if err == nil || h.ID != 5 || h.Type != v1.TypeBufferWrite {
		t.Errorf("oversized: %+v, %v", h, err)
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	frame := func(typ v1.Type, flags v1.Flags, payload []byte) []byte {
		b := v1.Header{Length: uint32(len(payload)), Type: typ, Flags: flags, ID: 9}.Append(nil)
		return append(b, payload...)
	}
	launch := v1.Marshal(&v1.Launch{Kernel: 1})
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"ok", frame(v1.TypeLaunch, 0, launch), nil},
		{"payload shorter than header says", frame(v1.TypeLaunch, 0, launch)[:20], v1.ErrMalformed},
		{"payload longer than header says", append(frame(v1.TypeLaunch, 0, launch), 0), v1.ErrMalformed},
		{"unknown type", frame(99, 0, nil), v1.ErrUnsupported},
		{"zero type", frame(0, 0, nil), v1.ErrUnsupported},
		{"reply type without reply flag", frame(v1.TypeEmpty, 0, nil), v1.ErrMalformed},
		{"request type with reply flag", frame(v1.TypeLaunch, v1.FlagReply, launch), v1.ErrMalformed},
		{"error type without error flag", frame(v1.TypeError, v1.FlagReply, v1.Marshal(v1.ErrBusy)), v1.ErrMalformed},
		{"error flag on empty", frame(v1.TypeEmpty, v1.FlagReply|v1.FlagError, nil), v1.ErrMalformed},
		{"fd on launch", frame(v1.TypeLaunch, v1.Flags(0).WithFDs(2), launch), v1.ErrMalformed},
		{"session opened without fd", frame(v1.TypeSessionOpened, v1.FlagReply, v1.Marshal(&v1.SessionOpened{})), v1.ErrMalformed},
		{"noreply on sync request", frame(v1.TypeRelease, v1.FlagNoReply, v1.Marshal(&v1.Release{})), v1.ErrMalformed},
		{"noreply memcpy DtoH", frame(v1.TypeMemcpy, v1.FlagNoReply, v1.Marshal(&v1.Memcpy{Dir: v1.DirDtoH})), v1.ErrMalformed},
		{"noreply memcpy HtoD", frame(v1.TypeMemcpy, v1.FlagNoReply, v1.Marshal(&v1.Memcpy{Dir: v1.DirHtoD})), nil},
		{"bad payload", frame(v1.TypeMemset, 0, v1.Marshal(&v1.Memset{ElemSize: 8})), v1.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m, err := v1.DecodeFrame(tt.frame)
			if tt.want == nil {
				if err != nil || m == nil {
					t.Fatalf("DecodeFrame = %v, %v", m, err)
				}
				return
			}
			if !errors.Is(err, tt.want) || m != nil {
				t.Fatalf("DecodeFrame = %v, %v; want %v", m, err, tt.want)
			}
		})
	}
}

func TestPutFrameRefuses(t *testing.T) {
	tests := []struct {
		name  string
		flags v1.Flags
		m     v1.Message
	}{
		{"reply without flag", 0, &v1.Empty{}},
		{"request with reply flag", v1.FlagReply, &v1.Launch{}},
		{"error without error flag", v1.FlagReply, v1.ErrBusy},
		{"wrong fd count", v1.FlagReply, &v1.SessionOpened{}},
		{"noreply on sync type", v1.FlagNoReply, &v1.CreateBuffer{}},
		{"noreply on DtoH", v1.FlagNoReply, &v1.Memcpy{Dir: v1.DirDtoH}},
		{"unknown flag", 1 << 9, &v1.Launch{}},
		{"too large", 0, &v1.BufferWrite{Data: make([]byte, v1.MaxPayload)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := v1.NewEncoder(make([]byte, 0, 64))
			e.PutUint8(7)
			if err := e.PutFrame(1, tt.flags, tt.m); !errors.Is(err, v1.ErrMalformed) {
				t.Fatalf("PutFrame = %v, want Malformed", err)
			}
			if !bytes.Equal(e.Bytes(), []byte{7}) {
				t.Fatalf("PutFrame left %d bytes after refusing", e.Len())
			}
		})
	}
}

// TestGoldenLaunch pins the byte layout of a Launch frame to WIRE.md.
func TestGoldenLaunch(t *testing.T) {
	var e v1.Encoder
	m := &v1.Launch{Kernel: 0x0102, Stream: 3, Grid: [3]uint32{4, 5, 6}, Block: [3]uint32{7, 8, 9}, SharedMem: 10, Params: []byte{0xaa, 0xbb}}
	if err := e.PutFrame(0x1122334455667788, v1.FlagNoReply, m); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"32000000" + "1c00" + "0200" + "8877665544332211" + // length 50, type 28, flags NoReply, id
		"0201000000000000" + "0300000000000000" + // kernel, stream
		"040000000500000006000000" + "070000000800000009000000" + // grid, block
		"0a000000" + "02000000aabb" // shared mem, params
	if have := hex.EncodeToString(e.Bytes()); have != want {
		t.Errorf("Launch frame\nhave %s\nwant %s", have, want)
	}
}

func TestGoldenError(t *testing.T) {
	var e v1.Encoder
	if err := e.PutFrame(7, v1.FlagReply|v1.FlagError, &v1.Error{Code: v1.CodeRevoked, Result: -1, Message: "gone"}); err != nil {
		t.Fatal(err)
	}
	want := "0e000000" + "8100" + "0500" + "0700000000000000" + "0200" + "ffffffff" + "04000000676f6e65"
	if have := hex.EncodeToString(e.Bytes()); have != want {
		t.Errorf("Error frame\nhave %s\nwant %s", have, want)
	}
}

func TestErrorTravels(t *testing.T) {
	sent := v1.Wire(errors.Join(errors.New("context"), v1.Errorf(v1.CodeQuotaExceeded, "tenant %s over %d bytes", "alice", 10)))
	var e v1.Encoder
	if err := e.PutFrame(1, v1.FlagReply|v1.FlagError, sent); err != nil {
		t.Fatal(err)
	}
	_, m, err := v1.DecodeFrame(e.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got := m.(*v1.Error)
	if !errors.Is(got, v1.ErrQuotaExceeded) || got.Message != sent.Message || v1.CodeOf(got) != v1.CodeQuotaExceeded {
		t.Errorf("received %#v, sent %#v", got, sent)
	}
	// A code from a later minor version survives the trip.
	future := &v1.Error{Code: 4000, Message: "new"}
	back := new(v1.Error)
	if err := v1.Unmarshal(v1.Marshal(future), back); err != nil || *back != *future {
		t.Errorf("future code: %v, %v", back, err)
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ have, want string }{
		{v1.Rights(0).String(), "none"},
		{(v1.RightLaunch | v1.RightCopy).String(), "launch|copy"},
		{(v1.AllSessionRights | v1.AllBufferRights).String(), "alloc|load|launch|copy|grant|stream|buffer-read|buffer-write|buffer-grant"},
		{(v1.RightAlloc | 1<<40).String(), "alloc|0x10000000000"},
		{(v1.FlagReply | v1.FlagError).WithFDs(3).String(), "reply|error|fds=3"},
		{v1.Flags(0).String(), "none"},
		{v1.Flags(1 << 12).String(), "0x1000"},
		{v1.AllEndpoints.String(), "manager|driver|control"},
		{v1.Endpoint(0).String(), "none"},
		{v1.DirDtoH.String(), "DtoH"},
		{v1.Dir(9).String(), "dir(9)"},
		{v1.RoleControl.String(), "control"},
		{v1.Role(0).String(), "role(0)"},
		{v1.TypeLaunch.String(), "Launch"},
		{v1.TypeError.String(), "Error"},
	}
	for _, tt := range tests {
		if tt.have != tt.want {
			t.Errorf("have %q, want %q", tt.have, tt.want)
		}
	}
}

func TestFlagsFDs(t *testing.T) {
	for n := 0; n <= v1.MaxFDs; n++ {
		f := (v1.FlagReply | v1.FlagError).WithFDs(n)
		if f.FDs() != n || f&(v1.FlagReply|v1.FlagError) != v1.FlagReply|v1.FlagError {
			t.Errorf("WithFDs(%d) = %v", n, f)
		}
	}
}

func TestHelloCompatible(t *testing.T) {
	h := v1.NewHello(v1.RoleClient, "", "")
	if err := h.Compatible(); err != nil {
		t.Errorf("same version: %v", err)
	}
	h.Minor++
	if err := h.Compatible(); err != nil {
		t.Errorf("newer minor: %v", err)
	}
	h.Major++
	if err := h.Compatible(); !errors.Is(err, v1.ErrVersionMismatch) {
		t.Errorf("other major: %v, want VersionMismatch", err)
	}
}
