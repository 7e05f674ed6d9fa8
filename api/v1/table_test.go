package v1_test

import (
	"errors"
	"reflect"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/api/v1/v1test"
)

// TestTableMatchesSpec checks the table row by row against WIRE.md.
func TestTableMatchesSpec(t *testing.T) {
	const (
		M = v1.EndpointManager
		D = v1.EndpointDriver
		C = v1.EndpointControl
	)
	want := []struct {
		num   v1.Type
		name  string
		reply string
		ep    v1.Endpoint
		right v1.Rights
		async bool
		fds   int
	}{
		{1, "Hello", "HelloReply", M | D | C, 0, false, 0},
		{2, "ListDevices", "Devices", M, 0, false, 0},
		{3, "OpenSession", "SessionOpened", M, 0, false, 0},
		{4, "ListSessions", "Sessions", M, 0, false, 0},
		{5, "AuditQuery", "AuditLines", M, 0, false, 0},
		{6, "PolicyList", "Policies", M | C, 0, false, 0},
		{7, "PolicyUse", "Empty", M | C, 0, false, 0},
		{8, "SetShare", "Empty", M | C, 0, false, 0},
		{9, "TenantStats", "Tenants", M | C, 0, false, 0},
		{10, "PolicyLoad", "PolicyLoaded", M | C, 0, false, 0},
		{11, "PolicyUnload", "Empty", M | C, 0, false, 0},
		{12, "PolicyMaps", "PolicyMapValues", M | C, 0, false, 0},
		{20, "CreateBuffer", "BufferCreated", D, v1.RightAlloc, false, 0},
		{21, "Release", "Empty", D, 0, false, 0},
		{22, "BufferWrite", "Empty", D, v1.RightCopy, false, 0},
		{23, "BufferRead", "Data", D, v1.RightCopy, false, 0},
		{24, "LoadProgram", "ProgramLoaded", D, v1.RightLoad, false, 0},
		{25, "GetKernel", "KernelInfo", D, v1.RightLoad, false, 0},
		{26, "GetGlobal", "BufferCreated", D, v1.RightLoad, false, 0},
		{27, "CreateStream", "StreamCreated", D, v1.RightStream, false, 0},
		{28, "Launch", "Empty", D, v1.RightLaunch, true, 0},
		{29, "Memcpy", "Empty", D, v1.RightCopy, true, 0},
		{30, "Memset", "Empty", D, v1.RightCopy, true, 0},
		{31, "RecordFence", "FenceCreated", D, v1.RightStream, false, 0},
		{32, "StreamWaitFence", "Empty", D, v1.RightStream, true, 0},
		{33, "PollFence", "Empty", D, 0, false, 0},
		{34, "WaitFence", "Empty", D, 0, false, 0},
		{35, "Synchronize", "Empty", D, 0, false, 0},
		{36, "Restrict", "RightsReply", D, 0, false, 0},
		{37, "Grant", "Granted", D, v1.RightGrant, false, 0},
		{38, "Attach", "BufferCreated", D, v1.RightGrant, false, 0},
		{39, "Revoke", "Empty", D, 0, false, 0},
		{40, "MemInfo", "MemInfoReply", D, 0, false, 0},
		{41, "FenceElapsed", "Duration", D, 0, false, 0},
		{42, "SessionInfo", "SessionStat", D, 0, false, 0},
		{43, "ShmGet", "ShmSegment", D, v1.RightGrant, false, 0},
		{44, "ShmAttach", "BufferCreated", D, v1.RightGrant, false, 0},
		{45, "ShmCtl", "ShmStat", D, v1.RightGrant, false, 0},
		{46, "OpenRing", "RingOpened", D, 0, false, 0},
		{47, "OpenStaging", "StagingOpened", D, v1.RightCopy, false, 0},
		{48, "StagedCopy", "Empty", D, v1.RightCopy, false, 0},
		{49, "MapHost", "HostMapped", D, v1.RightCopy, false, 0},
		{50, "UnmapHost", "Empty", D, 0, false, 0},
		{51, "HostCopy", "Empty", D, v1.RightCopy, true, 0},
		{52, "OpenCompletion", "CompletionOpened", D, 0, false, 0},
		{53, "SynchronizeFences", "FenceTargets", D, 0, false, 0},
		{54, "WatchLaunches", "Empty", D, 0, false, 0},
		{60, "AttachSession", "SessionAttached", C, 0, false, 1},
		{61, "DriverStats", "Sessions", C, 0, false, 0},
		{62, "KillSession", "Empty", C, 0, false, 0},
		{63, "DriverInfo", "Devices", C, 0, false, 0},
	}
	requests := 0
	for _, typ := range v1.Types() {
		if info, _ := v1.Lookup(typ); info.IsRequest() {
			requests++
		}
	}
	if requests != len(want) {
		t.Errorf("table has %d request types, spec has %d", requests, len(want))
	}
	for _, w := range want {
		info, ok := v1.Lookup(w.num)
		if !ok {
			t.Errorf("type %d (%s) missing", w.num, w.name)
			continue
		}
		have := []any{info.Name, info.Reply.String(), info.Endpoints, info.Right, info.Async, info.FDs}
		want := []any{w.name, w.reply, w.ep, w.right, w.async, w.fds}
		if !reflect.DeepEqual(have, want) {
			t.Errorf("type %d: have %v, want %v", w.num, have, want)
		}
	}
}

// TestTableConsistent checks what must hold for every row.
func TestTableConsistent(t *testing.T) {
	for _, typ := range v1.Types() {
		info, ok := v1.Lookup(typ)
		if !ok || info.Type != typ {
			t.Fatalf("Lookup(%d) = %+v, %v", typ, info, ok)
		}
		m := info.New()
		if m.Type() != typ {
			t.Errorf("%s: New().Type() = %v", info.Name, m.Type())
		}
		if goName := reflect.TypeOf(m).Elem().Name(); goName != info.Name || typ.String() != info.Name {
			t.Errorf("type %d: Go type %s, table name %s, String %s", typ, goName, info.Name, typ)
		}
		if info.IsRequest() {
			if typ >= 128 {
				t.Errorf("%s: request numbered %d, want < 128", info.Name, typ)
			}
			if r, ok := v1.Lookup(info.Reply); !ok || r.IsRequest() {
				t.Errorf("%s: reply %v is not a reply type", info.Name, info.Reply)
			}
			if (info.Right != 0 || info.Async) && info.Endpoints != v1.EndpointDriver {
				t.Errorf("%s: right or async outside the driver endpoint", info.Name)
			}
			if info.Right&^v1.AllSessionRights != 0 {
				t.Errorf("%s: right %v is not a session right", info.Name, info.Right)
			}
		} else if typ < 128 || info.Reply != 0 || info.Right != 0 || info.Async {
			t.Errorf("reply %s: %+v", info.Name, info)
		}
	}
	for _, typ := range []v1.Type{0, 18, 19, 59, 64, 127, 255, 256, 0xffff} {
		if info, ok := v1.Lookup(typ); ok {
			t.Errorf("Lookup(%d) = %+v, want unknown", typ, info)
		}
	}
	if have, want := v1.Type(999).String(), "type(999)"; have != want {
		t.Errorf("String: have %q, want %q", have, want)
	}
}

func TestSamplesCoverEveryType(t *testing.T) {
	seen := map[v1.Type]bool{}
	for _, m := range v1test.Samples() {
		seen[m.Type()] = true
	}
	for _, typ := range v1.Types() {
		if !seen[typ] {
			t.Errorf("no sample of %v", typ)
		}
	}
}

func TestReplyType(t *testing.T) {
	tests := []struct {
		req  v1.Message
		want v1.Type
	}{
		{&v1.Memcpy{Dir: v1.DirHtoD}, v1.TypeEmpty},
		{&v1.Memcpy{Dir: v1.DirDtoH}, v1.TypeData},
		{&v1.Memcpy{Dir: v1.DirDtoD}, v1.TypeEmpty},
		{&v1.BufferRead{}, v1.TypeData},
		{&v1.Launch{}, v1.TypeEmpty},
		{&v1.OpenSession{}, v1.TypeSessionOpened},
		{&v1.Empty{}, 0},
	}
	for _, tt := range tests {
		if have := v1.ReplyType(tt.req); have != tt.want {
			t.Errorf("ReplyType(%v) = %v, want %v", tt.req.Type(), have, tt.want)
		}
	}
}

func TestAdmit(t *testing.T) {
	all := v1.AllSessionRights
	noLaunch := all &^ v1.RightLaunch
	hdr := func(typ v1.Type, flags v1.Flags) v1.Header { return v1.Header{Type: typ, Flags: flags, ID: 1} }
	tests := []struct {
		name string
		ep   v1.Endpoint
		have v1.Rights
		h    v1.Header
		want error // nil, or the v1 sentinel the error must match
	}{
		{"launch", v1.EndpointDriver, all, hdr(v1.TypeLaunch, 0), nil},
		{"async launch", v1.EndpointDriver, all, hdr(v1.TypeLaunch, v1.FlagNoReply), nil},
		{"launch without right", v1.EndpointDriver, noLaunch, hdr(v1.TypeLaunch, 0), v1.ErrPermissionDenied},
		{"async launch without right", v1.EndpointDriver, noLaunch, hdr(v1.TypeLaunch, v1.FlagNoReply), v1.ErrPermissionDenied},
		{"launch on manager", v1.EndpointManager, all, hdr(v1.TypeLaunch, 0), v1.ErrPermissionDenied},
		{"control on session", v1.EndpointDriver, all, hdr(v1.TypeKillSession, 0), v1.ErrPermissionDenied},
		{"manager request on driver", v1.EndpointDriver, all, hdr(v1.TypeOpenSession, 0), v1.ErrPermissionDenied},
		{"hello anywhere", v1.EndpointControl, 0, hdr(v1.TypeHello, 0), nil},
		{"release needs nothing", v1.EndpointDriver, 0, hdr(v1.TypeRelease, 0), nil},
		{"attach needs grant", v1.EndpointDriver, all &^ v1.RightGrant, hdr(v1.TypeAttach, 0), v1.ErrPermissionDenied},
		{"unknown type", v1.EndpointDriver, all, hdr(77, 0), v1.ErrUnsupported},
		{"reply frame", v1.EndpointDriver, all, hdr(v1.TypeEmpty, v1.FlagReply), v1.ErrMalformed},
		{"reply type as request", v1.EndpointDriver, all, hdr(v1.TypeEmpty, 0), v1.ErrMalformed},
		{"sync type sent async", v1.EndpointDriver, all, hdr(v1.TypeCreateBuffer, v1.FlagNoReply), v1.ErrMalformed},
		{"fd on launch", v1.EndpointDriver, all, hdr(v1.TypeLaunch, v1.Flags(0).WithFDs(1)), v1.ErrMalformed},
		{"attach session without fd", v1.EndpointControl, all, hdr(v1.TypeAttachSession, 0), v1.ErrMalformed},
		{"attach session with fd", v1.EndpointControl, all, hdr(v1.TypeAttachSession, v1.Flags(0).WithFDs(1)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := v1.Admit(tt.ep, tt.have, tt.h)
			if tt.want == nil {
				if err != nil || info.Type != tt.h.Type {
					t.Fatalf("Admit = %v, %v; want the row of %v and nil", info.Type, err, tt.h.Type)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Admit error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestAdmitMessage(t *testing.T) {
	async := v1.Header{Type: v1.TypeMemcpy, Flags: v1.FlagNoReply}
	if err := v1.AdmitMessage(async, &v1.Memcpy{Dir: v1.DirHtoD}); err != nil {
		t.Errorf("async HtoD: %v", err)
	}
	if err := v1.AdmitMessage(async, &v1.Memcpy{Dir: v1.DirDtoH}); !errors.Is(err, v1.ErrMalformed) {
		t.Errorf("async DtoH: %v, want Malformed", err)
	}
	if err := v1.AdmitMessage(v1.Header{Type: v1.TypeMemcpy}, &v1.Memcpy{Dir: v1.DirDtoH}); err != nil {
		t.Errorf("sync DtoH: %v", err)
	}
}
