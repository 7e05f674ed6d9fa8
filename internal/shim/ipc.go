package shim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"

	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// CUDA IPC (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle) on
// top of gpuos grants. Exporting an allocation grants its buffer (read and
// write) to whoever presents the grant's token; the 64-byte CUipcMemHandle
// carries the token. Opening the handle in another process — of any tenant
// that knows it, on the same device — attaches the granted buffer into that
// process's session window: the same device memory at an address of its
// own. Closing detaches it. When the exporter frees the allocation (or
// exits), the grant goes with it and every process that opened the handle
// loses its mapping (later copies through it fail; its kernels read the
// window's sink), where CUDA leaves the behaviour undefined.
//
// Only allocations with device memory of their own can be exported: those of
// at least the device's mapping granularity (2 MiB on an H100), as CUDA's
// caching allocators make. A smaller cuMemAlloc shares its memory with its
// neighbours and is refused (CUDA_ERROR_NOT_SUPPORTED).

// IpcHandle is a CUipcMemHandle.
type IpcHandle [cu.CU_IPC_HANDLE_SIZE]byte

// ipcMagic opens every handle gpuos makes, so that a handle from elsewhere
// (or zeros) is told apart.
var ipcMagic = [8]byte{'g', 'p', 'u', 'o', 's', 'I', 'P', 'C'}

// Handle layout: magic, grant token, size, device ordinal.
const (
	ipcTokenAt  = 8
	ipcSizeAt   = 24
	ipcDeviceAt = 32
)

func makeIpcHandle(token [16]byte, size uint64, ordinal int) IpcHandle {
	var h IpcHandle
	copy(h[:], ipcMagic[:])
	copy(h[ipcTokenAt:], token[:])
	binary.LittleEndian.PutUint64(h[ipcSizeAt:], size)
	binary.LittleEndian.PutUint32(h[ipcDeviceAt:], uint32(ordinal))
	return h
}

// parse returns the token and the device of a handle gpuos made.
func (h IpcHandle) parse() (token [16]byte, ordinal int, ok bool) {
	if !bytes.Equal(h[:len(ipcMagic)], ipcMagic[:]) {
		return token, 0, false
	}
	copy(token[:], h[ipcTokenAt:])
	return token, int(binary.LittleEndian.Uint32(h[ipcDeviceAt:])), true
}

// ipcState is a driver's exported and opened handles.
type ipcState struct {
	mu      sync.Mutex
	exports map[*alloc]ipcExport
	imports map[[16]byte]*ipcImport // by token
}

type ipcExport struct {
	grant  *client.Grant
	handle IpcHandle
}

type ipcImport struct {
	a    *alloc
	refs int
}

// ipcStates holds each Driver's ipcState (one Driver per process, more in
// tests).
var ipcStates sync.Map // *Driver -> *ipcState

func (d *Driver) ipc() *ipcState {
	if v, ok := ipcStates.Load(d); ok {
		return v.(*ipcState)
	}
	v, _ := ipcStates.LoadOrStore(d, &ipcState{exports: map[*alloc]ipcExport{}, imports: map[[16]byte]*ipcImport{}})
	return v.(*ipcState)
}

// IpcGetMemHandle is cuIpcGetMemHandle: a handle for the allocation that
// starts at ptr. Asking again for the same allocation gives the same handle.
func (d *Driver) IpcGetMemHandle(t Thread, ptr uint64) (IpcHandle, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return IpcHandle{}, r
	}
	a := d.mem.exact(ptr)
	if a == nil {
		return IpcHandle{}, cu.CUDA_ERROR_INVALID_VALUE
	}
	st := d.ipc()
	st.mu.Lock()
	defer st.mu.Unlock()
	for x := range st.exports { // forget allocations freed since
		if d.mem.exact(x.base) != x {
			delete(st.exports, x)
		}
	}
	if ex, ok := st.exports[a]; ok {
		return ex.handle, cu.CUDA_SUCCESS
	}
	g, err := a.sess.s.Grant(bg, a.buf, client.BufferRead|client.BufferWrite)
	if err != nil {
		if errors.Is(err, client.ErrInvalidArgument) {
			d.log.Once("ipc-small", "cuIpcGetMemHandle: a %d-byte allocation shares its device memory with its "+
				"neighbours; only allocations of at least the device's granularity can be exported", a.size)
			return IpcHandle{}, cu.CUDA_ERROR_NOT_SUPPORTED
		}
		return IpcHandle{}, d.fail(err)
	}
	ex := ipcExport{grant: g, handle: makeIpcHandle(g.Token(), a.size, a.sess.dev.ordinal)}
	st.exports[a] = ex
	return ex.handle, cu.CUDA_SUCCESS
}

// IpcOpenMemHandle is cuIpcOpenMemHandle: map the exported allocation into
// the current context's session and return its address there. Opening the
// same handle again returns the same address (and needs as many closes).
func (d *Driver) IpcOpenMemHandle(t Thread, h IpcHandle, flags uint32) (uint64, Result) {
	if flags&^uint32(cu.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != 0 {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	c, s, r := d.currentSession(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	token, ordinal, ok := h.parse()
	if !ok {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	if ordinal != s.dev.ordinal {
		// The memory lives on another device's driver process.
		return 0, cu.CUDA_ERROR_INVALID_DEVICE
	}
	st := d.ipc()
	st.mu.Lock()
	defer st.mu.Unlock()
	if im := st.imports[token]; im != nil && d.mem.exact(im.a.base) == im.a {
		im.refs++
		return im.a.base, cu.CUDA_SUCCESS
	}
	b, err := s.s.Attach(bg, token)
	if err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return 0, cu.CUDA_ERROR_INVALID_VALUE // revoked, or never made
		}
		return 0, d.fail(err)
	}
	a := &alloc{base: b.Addr(), size: b.Size(), id: d.newID(), ctx: c, sess: s, buf: b}
	d.mem.insert(a)
	st.imports[token] = &ipcImport{a: a, refs: 1}
	return a.base, cu.CUDA_SUCCESS
}

// IpcCloseMemHandle is cuIpcCloseMemHandle: undo one IpcOpenMemHandle of the
// mapping at ptr; the last one unmaps it.
func (d *Driver) IpcCloseMemHandle(t Thread, ptr uint64) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	st := d.ipc()
	st.mu.Lock()
	var im *ipcImport
	var token [16]byte
	for k, x := range st.imports {
		if x.a.base == ptr {
			im, token = x, k
			break
		}
	}
	if im == nil {
		st.mu.Unlock()
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	im.refs--
	if im.refs > 0 {
		st.mu.Unlock()
		return cu.CUDA_SUCCESS
	}
	delete(st.imports, token)
	st.mu.Unlock()
	if d.mem.exact(ptr) != im.a {
		return cu.CUDA_SUCCESS // freed with cuMemFree meanwhile
	}
	// Work already submitted may still use the mapping.
	if r := d.syncSession(im.a.sess); r != cu.CUDA_SUCCESS {
		d.freeAlloc(im.a)
		return r
	}
	return d.freeAlloc(im.a)
}
