package shim

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/testenv"
)

// ipcDrivers starts a daemon with two tenants and one driver (a process's
// shim) for each.
func ipcDrivers(t *testing.T) (exporter, importer *Driver) {
	t.Helper()
	cfg, err := config.Parse([]byte("tenants:\n  - name: a\n    token: a-token\n  - name: b\n    token: b-token\n"))
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t, testenv.Options{Config: cfg, SimMemory: "256MiB"})
	mk := func(token string) *Driver {
		d := New(Config{Options: client.Options{Socket: env.Socket, Token: token}, Log: NewLog(&syncBuffer{}, 0)})
		must(t, "Init", d.Init(0))
		_, r := d.CtxCreate(1, 0, 0)
		must(t, "CtxCreate", r)
		return d
	}
	return mk("a-token"), mk("b-token")
}

// A buffer written by one process (tenant a) is read, and written, by
// another (tenant b) through a CUDA IPC handle; closing unmaps it for b;
// freeing it in a revokes b's mapping.
func TestIpcAcrossTenants(t *testing.T) {
	a, b := ipcDrivers(t)
	const th = Thread(1)
	const n = 4 << 20 // own device memory: at least the granularity
	host := newCmem(t, 2*n)
	for i := 0; i < n; i++ {
		host.b[i] = byte(i * 7)
	}
	ptr, r := a.MemAlloc(th, n)
	must(t, "MemAlloc", r)
	must(t, "HtoD", a.MemcpyHtoD(th, ptr, host.addr(0), n, 0, false))
	h, r := a.IpcGetMemHandle(th, ptr)
	must(t, "IpcGetMemHandle", r)
	if h2, r := a.IpcGetMemHandle(th, ptr); r != cu.CUDA_SUCCESS || h2 != h {
		t.Errorf("second IpcGetMemHandle: %v, same handle %v", r, h2 == h)
	}
	want(t, "IpcGetMemHandle inside the allocation", func() Result { _, r := a.IpcGetMemHandle(th, ptr+256); return r }(), cu.CUDA_ERROR_INVALID_VALUE)

	q, r := b.IpcOpenMemHandle(th, h, uint32(cu.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
	must(t, "IpcOpenMemHandle", r)
	q2, r := b.IpcOpenMemHandle(th, h, 0)
	must(t, "IpcOpenMemHandle again", r)
	if q2 != q {
		t.Errorf("opening the handle twice gave %#x and %#x, want one address", q, q2)
	}
	must(t, "DtoH in b", b.MemcpyDtoH(th, host.addr(n), q, n, 0))
	if !bytes.Equal(host.b[n:], host.b[:n]) {
		t.Fatal("b does not read what a wrote")
	}
	base, size, r := b.MemGetAddressRange(th, q+100)
	if r != cu.CUDA_SUCCESS || base != q || size < n {
		t.Errorf("MemGetAddressRange in b: %#x+%d %v", base, size, r)
	}
	// b writes; a reads.
	for i := 0; i < 4096; i++ {
		host.b[n+i] = 0xEE
	}
	must(t, "HtoD in b", b.MemcpyHtoD(th, q, host.addr(n), 4096, 0, false))
	must(t, "DtoH in a", a.MemcpyDtoH(th, host.addr(0), ptr, 4096, 0))
	if host.b[0] != 0xEE || host.b[4095] != 0xEE {
		t.Error("a does not see b's write")
	}

	must(t, "IpcCloseMemHandle", b.IpcCloseMemHandle(th, q))
	must(t, "DtoH after one close", b.MemcpyDtoH(th, host.addr(n), q, 16, 0)) // still open once
	must(t, "IpcCloseMemHandle (last)", b.IpcCloseMemHandle(th, q))
	want(t, "DtoH after the last close", b.MemcpyDtoH(th, host.addr(n), q, 16, 0), cu.CUDA_ERROR_INVALID_VALUE)
	want(t, "IpcCloseMemHandle of a closed handle", b.IpcCloseMemHandle(th, q), cu.CUDA_ERROR_INVALID_VALUE)

	// Opened again, then the exporter frees: b's mapping is revoked.
	q, r = b.IpcOpenMemHandle(th, h, 0)
	must(t, "IpcOpenMemHandle after close", r)
	must(t, "MemFree in a", a.MemFree(th, ptr))
	if r := b.MemcpyDtoH(th, host.addr(n), q, 16, 0); r == cu.CUDA_SUCCESS {
		t.Error("b still reads through a handle whose allocation a freed")
	}
	must(t, "IpcCloseMemHandle of a revoked mapping", b.IpcCloseMemHandle(th, q))
	_, r = b.IpcOpenMemHandle(th, h, 0)
	want(t, "IpcOpenMemHandle of a freed allocation", r, cu.CUDA_ERROR_INVALID_VALUE)

	// Bad handles and small allocations.
	_, r = b.IpcOpenMemHandle(th, IpcHandle{}, 0)
	want(t, "IpcOpenMemHandle of zeros", r, cu.CUDA_ERROR_INVALID_VALUE)
	_, r = b.IpcOpenMemHandle(th, h, 2)
	want(t, "IpcOpenMemHandle with unknown flags", r, cu.CUDA_ERROR_INVALID_VALUE)
	small, r := a.MemAlloc(th, 4096)
	must(t, "MemAlloc small", r)
	_, r = a.IpcGetMemHandle(th, small)
	want(t, "IpcGetMemHandle of a sub-allocated buffer", r, cu.CUDA_ERROR_NOT_SUPPORTED)
}

// FuzzIpcHandle: any 64 bytes a process is handed parse without panicking,
// and what parses is what makeIpcHandle would have made.
func FuzzIpcHandle(f *testing.F) {
	h := makeIpcHandle([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 4<<20, 1)
	f.Add(h[:])
	f.Add(make([]byte, 64))
	f.Add([]byte("gpuosIPC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h IpcHandle
		copy(h[:], b)
		token, ordinal, ok := h.parse()
		if !ok {
			if bytes.HasPrefix(h[:], ipcMagic[:]) {
				t.Fatal("a handle with gpuos's magic did not parse")
			}
			return
		}
		again := makeIpcHandle(token, binary.LittleEndian.Uint64(h[ipcSizeAt:]), ordinal)
		if !bytes.Equal(again[:ipcDeviceAt+4], h[:ipcDeviceAt+4]) {
			t.Fatalf("parse/make round trip differs: %x vs %x", again, h)
		}
	})
}
