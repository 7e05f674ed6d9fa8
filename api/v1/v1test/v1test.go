package v1test

import v1 "github.com/gpuos/gpuos/api/v1"

// Samples returns fresh samples covering every type in v1.Types(): one message
// per type, plus extra variants where a type's encoding has cases (Memcpy in
// each direction). Callers may modify what they get.
func Samples() []v1.Message {
	uuid := [16]byte{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}
	stat := v1.SessionStat{
		ID: 7, Tenant: "alice", Device: 1, PID: 4242, Label: "train", Rights: v1.RightLaunch | v1.RightCopy,
		MemoryBytes: 1 << 30, Buffers: 3, Programs: 2, Streams: 4, Launches: 1000, Copies: 20, CopyBytes: 1 << 20,
		InFlight: 5, QueueDepth: 6, GPUTimeNs: 123456789, QueueDelayNs: 98765, Violations: 1, State: "active",
		Evictions: 12, SwappedBytes: 6 << 20,
	}
	dev := v1.DeviceInfo{
		Ordinal: 0, Name: "NVIDIA H100 80GB HBM3", UUID: uuid, PCIBusID: "0000:19:00.0",
		TotalMemory: 80 << 30, ComputeMajor: 9, ComputeMinor: 0, SMCount: 132, Attributes: []int32{1024, -1, 0, 132},
	}
	hello := v1.NewHello(v1.RoleClient, "secret-token", "nbody")
	hello.Tenant = "alice"
	return []v1.Message{
		hello,
		&v1.ListDevices{},
		&v1.OpenSession{Device: 1, Rights: v1.RightAlloc | v1.RightLaunch, Label: "job-1", PID: -1},
		&v1.ListSessions{},
		&v1.AuditQuery{Since: -5, Limit: 100, Tenant: "bob"},
		&v1.PolicyList{},
		&v1.PolicyUse{Name: "band"},
		&v1.SetShare{Tenant: "alice", Fields: v1.ShareCompute | v1.ShareCopy | v1.ShareMemory | v1.ShareClass,
			Compute: 3, Copy: 1, Memory: 4 << 30, Class: -1},
		&v1.TenantStats{},
		&v1.PolicyLoad{Name: "wfair", Module: []byte("\x00asm\x01\x00\x00\x00")},
		&v1.PolicyUnload{Name: "wfair"},
		&v1.PolicyMaps{Prefix: "wfair."},

		&v1.CreateBuffer{Size: 1 << 21, Flags: 1},
		&v1.Release{Handle: 0x0001000200000003},
		&v1.BufferWrite{Buffer: 9, Offset: 16, Data: []byte("hello, device")},
		&v1.BufferRead{Buffer: 9, Offset: 16, Length: 13},
		&v1.LoadProgram{Image: []byte(".version 9.0\n.target sm_90\n"), Name: "vecadd.ptx"},
		&v1.GetKernel{Program: 11, Name: "_Z6vecaddPfS_S_i"},
		&v1.GetGlobal{Program: 11, Name: "window"},
		&v1.CreateStream{Priority: -2, Flags: 1},
		&v1.Launch{Kernel: 12, Stream: 13, Grid: [3]uint32{1024, 2, 3}, Block: [3]uint32{256, 1, 1}, SharedMem: 4096,
			Params: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0xff, 0xfe, 0xfd, 0xfc}},
		&v1.Memcpy{Stream: 13, Dir: v1.DirHtoD, Dst: v1.Ref{Buffer: 9, Offset: 8}, Size: 4, Data: []byte{0xde, 0xad, 0xbe, 0xef}},
		&v1.Memcpy{Stream: 13, Dir: v1.DirDtoH, Src: v1.Ref{Buffer: 9, Offset: 8}, Size: 4},
		&v1.Memcpy{Stream: 0, Dir: v1.DirDtoD, Dst: v1.Ref{Offset: 0x7f0000200000}, Src: v1.Ref{Buffer: 9}, Size: 1 << 20},
		&v1.Memset{Stream: 13, Dst: v1.Ref{Buffer: 9, Offset: 4}, Value: 0xabcd, ElemSize: 2, Count: 1000},
		&v1.RecordFence{Stream: 13},
		&v1.StreamWaitFence{Stream: 14, Fence: 15},
		&v1.PollFence{Fence: 15},
		&v1.WaitFence{Fence: 15, TimeoutNs: 1e9},
		&v1.Synchronize{Stream: 13},
		&v1.Restrict{Rights: v1.RightCopy},
		&v1.Grant{Buffer: 9, Rights: v1.RightBufferRead | v1.RightBufferGrant},
		&v1.Attach{Token: uuid},
		&v1.Revoke{Handle: 16},
		&v1.MemInfo{},
		&v1.FenceElapsed{Start: 15, End: 17},
		&v1.SessionInfo{},
		&v1.ShmGet{Owner: "alice", Name: "frames", Size: 256 << 20, Flags: v1.ShmCreate | v1.ShmExclusive},
		&v1.ShmAttach{Segment: 19, ReadOnly: true},
		&v1.ShmCtl{Segment: 19, Op: v1.ShmAllow, Tenant: "bob", Rights: v1.RightBufferRead},

		&v1.OpenRing{SubmitBytes: 1 << 19, CompleteBytes: 1 << 18},
		&v1.OpenStaging{Bytes: 64 << 20, SlotBytes: 4 << 20},
		&v1.StagedCopy{Stream: 13, Dir: v1.DirHtoD, Dev: v1.Ref{Buffer: 9, Offset: 4096}, Offset: 8 << 20, Size: 4 << 20, Gen: 7, Wait: true},
		&v1.StagedCopy{Stream: 0, Dir: v1.DirDtoH, Dev: v1.Ref{Offset: 0x7f0000200000}, Offset: 12 << 20, Size: 100, Gen: 0xffffffff},
		&v1.MapHost{Bytes: 256 << 20},
		&v1.UnmapHost{Handle: 0x8000000000000003},
		&v1.HostCopy{Stream: 13, Dir: v1.DirDtoH, Dev: v1.Ref{Buffer: 9, Offset: 64}, Host: 0x8000000000000003, Offset: 4096, Size: 1 << 28},
		&v1.OpenCompletion{},
		&v1.SynchronizeFences{Stream: 13},
		&v1.WatchLaunches{},

		&v1.AttachSession{SessionID: 7, Tenant: "alice", Rights: v1.AllSessionRights, MemoryQuota: 8 << 30,
			Weight: 3, Priority: -1, PID: 4242, UID: 1000, Label: "train",
			Trust: v1.TrustTrusted, TrustedModules: [][32]byte{{1, 2, 3}, {31: 9}}},
		&v1.DriverStats{},
		&v1.KillSession{SessionID: 7, Reason: "guard violation"},
		&v1.DriverInfo{},

		&v1.Empty{},
		v1.Errorf(v1.CodeGuardViolation, "kernel %q wrote outside its window", "vecadd"),
		&v1.Error{Code: v1.CodeLaunchFailed, Result: 719, Message: "launch failed: unspecified launch failure"},
		&v1.HelloReply{Major: v1.Major, Minor: v1.Minor, Server: "gpuos test", Backend: "sim"},
		&v1.Devices{Devices: []v1.DeviceInfo{dev, {Ordinal: 1, Name: "sim"}}, Backend: "cuda", DriverVersion: 13000},
		&v1.SessionOpened{SessionID: 7, Tenant: "alice", Rights: v1.AllSessionRights, WindowBase: 1 << 40, WindowSize: 1 << 34, MemoryQuota: 8 << 30, Trust: v1.TrustTrusted},
		&v1.Sessions{Sessions: []v1.SessionStat{stat, {ID: 8, State: "closed"}}},
		&v1.AuditLines{Lines: []string{`{"op":"open"}`, "", `{"op":"launch"}`}},
		&v1.BufferCreated{Handle: 9, Addr: 1<<40 + 1<<21, Size: 1 << 21},
		&v1.Data{Data: []byte{0, 1, 2, 3, 255}},
		&v1.ProgramLoaded{Handle: 11, Kernels: []string{"_Z6vecaddPfS_S_i", "saxpy"}},
		&v1.KernelInfo{Handle: 12, Params: []v1.ParamInfo{{Offset: 0, Size: 8}, {Offset: 8, Size: 8}, {Offset: 16, Size: 4}}, MaxThreadsPerBlock: 1024,
			SharedSizeBytes: 1, ConstSizeBytes: 2, LocalSizeBytes: 3, NumRegs: 32, PTXVersion: 90, BinaryVersion: 90, MaxDynamicSharedMem: 48 << 10},
		&v1.StreamCreated{Handle: 13},
		&v1.FenceCreated{Handle: 15},
		&v1.RightsReply{Rights: v1.RightCopy},
		&v1.Granted{Handle: 18, Token: uuid},
		&v1.MemInfoReply{Free: 1 << 30, Total: 8 << 30},
		&v1.Duration{Ns: 1500},
		&stat,
		&v1.SessionAttached{WindowBase: 1 << 40, WindowSize: 1 << 34},
		&v1.RingOpened{SubmitBytes: 1 << 19, CompleteBytes: 1 << 18, SpinNs: 2e6},
		&v1.StagingOpened{Slots: 16, SlotBytes: 4 << 20},
		&v1.HostMapped{Handle: 0x8000000000000003, Bytes: 256 << 20},
		&v1.CompletionOpened{Bytes: 8192, Words: 64, WordStride: 64, FaultsOffset: 4096, FaultsBytes: 4096, SpinNs: 2e6},
		&v1.FenceTargets{Targets: []v1.FenceTarget{{Word: 0, Seq: 7}, {Word: 63, Seq: 0xffffffff}}},
		&v1.Policies{Active: "fair", Fallback: "fair", Policies: []v1.PolicyInfo{
			{Name: "fair", Description: "weighted fair share", Builtin: true, Active: true},
			{Name: "edf", Description: "deadlines", Ejected: "hook overran its deadline"}}},
		&v1.Tenants{Tenants: []v1.TenantStat{{Name: "alice", Device: 1, Class: 1, ClassSet: true, Compute: 3, Copy: 2,
			Memory: 4 << 30, Sessions: 2, GPUTimeNs: 5e9, CopyBytes: 1 << 33, ComputeShare: 750000, ComputeTarget: 750000,
			CopyShare: 400000, CopyTarget: 666666, QueueDelayNs: 12345, Dispatched: 99, InFlight: 4, Queued: 17},
			{Name: "bob", Class: -1}}},
		&v1.PolicyLoaded{Name: "wfair", SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Size: 2 << 20,
			Hooks: 1<<0 | 1<<2 | 1<<3 | 1<<4 | 1<<6, CheckSites: 51234},
		&v1.PolicyMapValues{Maps: []v1.MapInfo{
			{Device: 1, Name: "wfair.vtime.compute", Kind: v1.MapOfLoaded, Values: []v1.MapValue{{Tenant: "alice", Value: -7}, {Tenant: "bob", Value: 1 << 40}}},
			{Name: "weight.compute", Kind: v1.MapOfHost}}},
		&v1.ShmSegment{Handle: 19, Owner: "alice", Name: "frames", Size: 256 << 20, Rights: v1.RightBufferRead | v1.RightBufferWrite, Created: true},
		&v1.ShmStat{Owner: "alice", Name: "frames", Size: 256 << 20, Handles: 2, Mappings: 3, Removed: true,
			Allowed: []v1.ShmAccess{{Tenant: "bob", Rights: v1.RightBufferRead}, {Tenant: "carol", Rights: v1.RightBufferRead | v1.RightBufferWrite}}},
	}
}

// Flags returns the header flags a frame carrying m must have: Reply for reply
// types, Reply|Error for an Error, and the table's file descriptor count.
func Flags(m v1.Message) v1.Flags {
	info, _ := v1.Lookup(m.Type())
	var f v1.Flags
	if !info.IsRequest() {
		f |= v1.FlagReply
	}
	if m.Type() == v1.TypeError {
		f |= v1.FlagError
	}
	return f.WithFDs(info.FDs)
}
