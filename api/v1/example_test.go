package v1_test

import (
	"errors"
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Encode a Launch request as a whole frame and decode it back, as a driver
// receiving it would.
func ExampleEncoder_PutFrame() {
	var enc v1.Encoder // reuse it: once grown, encoding allocates nothing
	launch := &v1.Launch{Kernel: 12, Grid: [3]uint32{64, 1, 1}, Block: [3]uint32{256, 1, 1}, Params: []byte{1, 2, 3, 4}}
	if err := enc.PutFrame(1, v1.FlagNoReply, launch); err != nil {
		panic(err)
	}
	frame := enc.Bytes()

	h, m, err := v1.DecodeFrame(frame)
	if err != nil {
		panic(err)
	}
	got := m.(*v1.Launch)
	fmt.Println(len(frame), h.Type, h.Flags, got.Grid, got.Params)
	// Output: 68 Launch noreply [64 1 1] [1 2 3 4]
}

// Encode a request payload alone and decode it into a reused message.
func ExampleUnmarshal() {
	payload := v1.Marshal(&v1.OpenSession{Device: 0, Rights: v1.RightLaunch | v1.RightCopy, Label: "job"})

	var req v1.OpenSession
	if err := v1.Unmarshal(payload, &req); err != nil {
		panic(err)
	}
	fmt.Println(req.Rights, req.Label)

	// Strict: one byte too many is malformed.
	err := v1.Unmarshal(append(payload, 0), &req)
	fmt.Println(errors.Is(err, v1.ErrMalformed))
	// Output:
	// launch|copy job
	// true
}

// A driver checks each request against the table before decoding it: a
// session restricted to copies has no launch method.
func ExampleAdmit() {
	copyOnly := v1.RightCopy
	for _, t := range []v1.Type{v1.TypeMemcpy, v1.TypeLaunch, v1.TypeKillSession, 99} {
		_, err := v1.Admit(v1.EndpointDriver, copyOnly, v1.Header{Type: t})
		fmt.Printf("%v: %v\n", t, v1.CodeOf(err))
	}
	// Output:
	// Memcpy: ok
	// Launch: permission denied
	// KillSession: permission denied
	// type(99): unsupported
}

// An error travels as an Error reply and still matches its sentinel.
func ExampleError_Encode() {
	var enc v1.Encoder
	sent := v1.Errorf(v1.CodeRevoked, "buffer %d was revoked", 9)
	if err := enc.PutFrame(42, v1.FlagReply|v1.FlagError, sent); err != nil {
		panic(err)
	}
	h, m, _ := v1.DecodeFrame(enc.Bytes())
	err := error(m.(*v1.Error))
	fmt.Println(h.ID, h.Flags, errors.Is(err, v1.ErrRevoked), err)
	// Output: 42 reply|error true revoked: buffer 9 was revoked
}

// Walk the table.
func ExampleLookup() {
	info, _ := v1.Lookup(v1.TypeMemcpy)
	fmt.Println(info.Name, info.Reply, info.Endpoints, info.Right, info.Async)
	fmt.Println(v1.ReplyType(&v1.Memcpy{Dir: v1.DirDtoH}))
	// Output:
	// Memcpy Empty driver copy true
	// Data
}
