package policy

import (
	"context"
	"encoding/binary"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// The WASI subset. The Go toolchain's wasip1 runtime imports ten WASI
// functions whatever the program does, and its syscall package (which time
// and os import) four more at start-up to look for preopened directories; a
// policy may import those and no other. None of them reaches anything
// outside the guest:
//
//	args_get, args_sizes_get, environ_get, environ_sizes_get
//	                 no arguments, no environment
//	clock_time_get   a virtual clock: it starts at 0 (realtime: at wasiEpoch)
//	                 and advances by 1 µs per read and by what poll_oneoff
//	                 sleeps; it tells nothing about the host's time (the
//	                 scheduler's clock is the ABI's now)
//	fd_write         fds 1 and 2 go to the policy's log (bounded); others: EBADF
//	random_get       a deterministic stream seeded by the module's hash, so a
//	                 policy decides the same way on the same inputs
//	poll_oneoff      never blocks: clock subscriptions fire at once (advancing
//	                 the virtual clock), fd subscriptions fail with EBADF
//	sched_yield      returns at once
//	proc_exit        stops the guest (the policy is ejected)
//	fd_fdstat_get    fds 0-2 are character devices (1 and 2 writable); others: EBADF
//	fd_fdstat_set_flags  accepted and ignored for fds 0-2; others: EBADF
//	fd_prestat_get, fd_prestat_dir_name
//	                 EBADF: there are no preopened directories
//
// There is no filesystem, no socket and no real clock, and fd_read, path_open
// and the rest are refused at load.
const wasiModule = "wasi_snapshot_preview1"

var wasiFuncs = map[string]hostFunc{
	"args_get":          {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"args_sizes_get":    {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"environ_get":       {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"environ_sizes_get": {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"clock_time_get":    {[]api.ValueType{i32, i64, i32}, []api.ValueType{i32}},
	"fd_write":          {[]api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}},
	"random_get":        {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"poll_oneoff":       {[]api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}},
	"sched_yield":       {nil, []api.ValueType{i32}},
	"proc_exit":         {[]api.ValueType{i32}, nil},

	"fd_fdstat_get":       {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"fd_fdstat_set_flags": {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"fd_prestat_get":      {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"fd_prestat_dir_name": {[]api.ValueType{i32, i32, i32}, []api.ValueType{i32}},
}

// WASI errno values used here.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
)

// wasiEpoch is what the realtime clock reads at virtual time 0:
// 2024-01-01T00:00:00Z.
const wasiEpoch = 1704067200 * 1e9

// wasi is one instance's WASI state.
type wasi struct {
	clock uint64 // virtual ns
	rng   uint64 // xorshift64* state, never 0
	log   *guestLog
}

func (w *wasi) next() uint64 {
	w.rng ^= w.rng >> 12
	w.rng ^= w.rng << 25
	w.rng ^= w.rng >> 27
	return w.rng * 2685821657736338717
}

func putU32(mod api.Module, ptr uint32, v uint32) bool { return mod.Memory().WriteUint32Le(ptr, v) }

func (w *wasi) instantiate(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(wasiModule)
	fn := func(name string, f api.GoModuleFunc) {
		d := wasiFuncs[name]
		b.NewFunctionBuilder().WithGoModuleFunction(f, d.params, d.results).Export(name)
	}
	zeroPair := func(_ context.Context, mod api.Module, stack []uint64) {
		if !putU32(mod, uint32(stack[0]), 0) || !putU32(mod, uint32(stack[1]), 0) {
			stack[0] = errnoFault
			return
		}
		stack[0] = errnoSuccess
	}
	nothing := func(_ context.Context, _ api.Module, stack []uint64) { stack[0] = errnoSuccess }
	fn("args_sizes_get", zeroPair)
	fn("environ_sizes_get", zeroPair)
	fn("args_get", nothing)
	fn("environ_get", nothing)
	fn("sched_yield", nothing)
	fn("clock_time_get", func(_ context.Context, mod api.Module, stack []uint64) {
		id, ptr := uint32(stack[0]), uint32(stack[2])
		w.clock += 1000
		t := w.clock
		switch id {
		case 0: // realtime
			t += wasiEpoch
		case 1, 2, 3: // monotonic, process and thread CPU time
		default:
			stack[0] = errnoInval
			return
		}
		if !mod.Memory().WriteUint64Le(ptr, t) {
			stack[0] = errnoFault
			return
		}
		stack[0] = errnoSuccess
	})
	fn("random_get", func(_ context.Context, mod api.Module, stack []uint64) {
		ptr, n := uint32(stack[0]), uint32(stack[1])
		buf, ok := mod.Memory().Read(ptr, n)
		if !ok {
			stack[0] = errnoFault
			return
		}
		for i := 0; i < len(buf); i += 8 {
			var x [8]byte
			binary.LittleEndian.PutUint64(x[:], w.next())
			copy(buf[i:], x[:])
		}
		stack[0] = errnoSuccess
	})
	fn("fd_write", func(_ context.Context, mod api.Module, stack []uint64) {
		fd, iovs, n, out := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
		if fd != 1 && fd != 2 {
			stack[0] = errnoBadf
			return
		}
		mem := mod.Memory()
		var total uint32
		for i := uint32(0); i < n; i++ {
			ptr, ok1 := mem.ReadUint32Le(iovs + 8*i)
			size, ok2 := mem.ReadUint32Le(iovs + 8*i + 4)
			data, ok3 := mem.Read(ptr, size)
			if !ok1 || !ok2 || !ok3 {
				stack[0] = errnoFault
				return
			}
			w.log.write(data)
			total += size
		}
		if !putU32(mod, out, total) {
			stack[0] = errnoFault
			return
		}
		stack[0] = errnoSuccess
	})
	fn("poll_oneoff", func(_ context.Context, mod api.Module, stack []uint64) {
		in, out, n, nevents := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
		if n == 0 || n > 1024 {
			stack[0] = errnoInval
			return
		}
		mem := mod.Memory()
		subs, ok1 := mem.Read(in, n*48)
		evs, ok2 := mem.Read(out, n*32)
		if !ok1 || !ok2 {
			stack[0] = errnoFault
			return
		}
		var advance uint64
		for i := uint32(0); i < n; i++ {
			s, e := subs[i*48:], evs[i*32:(i+1)*32]
			clear(e)
			copy(e[0:8], s[0:8]) // userdata
			tag := s[8]
			e[10] = tag
			switch tag {
			case 0: // clock: fires now
				timeout := binary.LittleEndian.Uint64(s[24:])
				if binary.LittleEndian.Uint16(s[40:])&1 != 0 { // absolute
					if timeout > w.clock {
						timeout -= w.clock
					} else {
						timeout = 0
					}
				}
				advance = max(advance, timeout)
			case 1, 2: // fd_read, fd_write
				binary.LittleEndian.PutUint16(e[8:], errnoBadf)
			default:
				binary.LittleEndian.PutUint16(e[8:], errnoInval)
			}
		}
		w.clock += min(advance, 1<<50) // no overflow however long it sleeps
		if !putU32(mod, nevents, n) {
			stack[0] = errnoFault
			return
		}
		stack[0] = errnoSuccess
	})
	fn("fd_fdstat_get", func(_ context.Context, mod api.Module, stack []uint64) {
		fd, ptr := uint32(stack[0]), uint32(stack[1])
		if fd > 2 {
			stack[0] = errnoBadf
			return
		}
		buf, ok := mod.Memory().Read(ptr, 24)
		if !ok {
			stack[0] = errnoFault
			return
		}
		clear(buf)
		buf[0] = 2 // character device
		if fd > 0 {
			binary.LittleEndian.PutUint64(buf[8:], 1<<6) // fd_write
		}
		stack[0] = errnoSuccess
	})
	fn("fd_fdstat_set_flags", func(_ context.Context, _ api.Module, stack []uint64) {
		if uint32(stack[0]) > 2 {
			stack[0] = errnoBadf
			return
		}
		stack[0] = errnoSuccess
	})
	badf := func(_ context.Context, _ api.Module, stack []uint64) { stack[0] = errnoBadf }
	fn("fd_prestat_get", badf)
	fn("fd_prestat_dir_name", badf)
	fn("proc_exit", func(_ context.Context, _ api.Module, stack []uint64) {
		panic(sys.NewExitError(uint32(stack[0])))
	})
	_, err := b.Instantiate(ctx)
	return err
}
