package shim

import (
	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// loc is one side of a copy: device memory (dev set) or host memory.
type loc struct {
	addr uint64
	dev  *alloc // the device range holding the side, nil for host memory
}

// locate classifies an address of unified addressing for n bytes: memory the
// shim handed out or registered is host memory; an address in a known device
// range is device memory, and must hold all n bytes; an address in a session's
// window that is not allocated is an error; anything else is the
// application's own host memory.
func (d *Driver) locate(addr, n uint64) (loc, Result) {
	if addr == 0 {
		return loc{}, cu.CUDA_ERROR_INVALID_VALUE
	}
	if d.host.find(addr, 1) != nil {
		return loc{addr: addr}, cu.CUDA_SUCCESS
	}
	if a := d.mem.find(addr, 1); a != nil {
		if a2 := d.mem.find(addr, max(n, 1)); a2 == nil {
			return loc{}, cu.CUDA_ERROR_INVALID_VALUE // runs past the allocation
		}
		return loc{addr: addr, dev: a}, cu.CUDA_SUCCESS
	}
	if d.inWindow(addr) {
		return loc{}, cu.CUDA_ERROR_INVALID_VALUE
	}
	return loc{addr: addr}, cu.CUDA_SUCCESS
}

// inWindow reports whether addr lies in the address window of an open session.
func (d *Driver) inWindow(addr uint64) bool {
	for _, dv := range d.devices {
		dv.mu.Lock()
		s := dv.sess
		dv.mu.Unlock()
		if s == nil {
			continue
		}
		if base, size := s.s.Window(); addr >= base && addr-base < size {
			return true
		}
	}
	return false
}

// deviceLoc is a side that must be device memory.
func (d *Driver) deviceLoc(addr, n uint64) (loc, Result) {
	a, r := d.deviceRange(addr, n)
	if r != cu.CUDA_SUCCESS {
		return loc{}, r
	}
	return loc{addr: addr, dev: a}, cu.CUDA_SUCCESS
}

// hostLoc is a side that must be host memory.
func hostLoc(addr uint64) (loc, Result) {
	if addr == 0 {
		return loc{}, cu.CUDA_ERROR_INVALID_VALUE
	}
	return loc{addr: addr}, cu.CUDA_SUCCESS
}

// copyStream picks the daemon stream of a copy between dst and src on stream
// h: the device side's session decides what a default stream means; a copy
// between host memory uses the current context's, if any.
func (d *Driver) copyStream(t Thread, h uint64, dst, src loc) (*dstream, Result) {
	var s *session
	switch {
	case dst.dev != nil && src.dev != nil && dst.dev.sess != src.dev.sess:
		return nil, d.Refuse("copies between devices")
	case dst.dev != nil:
		s = dst.dev.sess
	case src.dev != nil:
		s = src.dev.sess
	default:
		if !isDefaultStream(h) {
			return d.streamOf(t, h)
		}
		if _, cs, r := d.currentSession(t); r == cu.CUDA_SUCCESS {
			return cs.blocking, cu.CUDA_SUCCESS
		}
		return nil, cu.CUDA_SUCCESS // no context: a plain host copy
	}
	return d.streamIn(h, s)
}

// copy1 copies n bytes from src to dst on ds in stream order. sync asks for a
// copy that has completed on return (CUDA's synchronous copies); copies from
// the device always complete before returning, since their bytes come back in
// the reply.
func (d *Driver) copy1(ds *dstream, dst, src loc, n uint64, sync bool) Result {
	if n == 0 {
		return cu.CUDA_SUCCESS
	}
	if ds != nil {
		if r := ds.wait(); r != cu.CUDA_SUCCESS {
			return r
		}
	}
	switch {
	case dst.dev != nil && src.dev != nil:
		ds.submit()
		return d.fail(ds.sess.s.CopyDevice(client.Addr(dst.addr), client.Addr(src.addr), n, ds.cs))
	case dst.dev != nil:
		data := hostBytes(uintptr(src.addr), n)
		if sync {
			before := ds.submitted.Load()
			return ds.completes(before, ds.sess.s.CopyToDeviceSync(bg, client.Addr(dst.addr), data, ds.cs))
		}
		ds.submit()
		return d.fail(ds.sess.s.CopyToDevice(client.Addr(dst.addr), data, ds.cs))
	case src.dev != nil:
		before := ds.submitted.Load()
		return ds.completes(before, ds.sess.s.CopyFromDevice(bg, hostBytes(uintptr(dst.addr), n), client.Addr(src.addr), ds.cs))
	}
	// Host to host: after the stream's work, like any copy on it.
	if ds != nil {
		if err := ds.sync(); err != nil {
			return d.fail(err)
		}
	}
	copy(hostBytes(uintptr(dst.addr), n), hostBytes(uintptr(src.addr), n))
	return cu.CUDA_SUCCESS
}

// Memcpy is cuMemcpy and cuMemcpyAsync: either side may be host or device
// memory (unified addressing).
func (d *Driver) Memcpy(t Thread, dst, src, n uint64, stream uint64, async bool) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	dl, r := d.locate(dst, n)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	sl, r := d.locate(src, n)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	return d.copyOn(t, stream, dl, sl, n, !async)
}

func (d *Driver) copyOn(t Thread, stream uint64, dst, src loc, n uint64, sync bool) Result {
	ds, r := d.copyStream(t, stream, dst, src)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	return d.copy1(ds, dst, src, n, sync)
}

// MemcpyHtoD is cuMemcpyHtoD and cuMemcpyHtoDAsync.
func (d *Driver) MemcpyHtoD(t Thread, dst uint64, src uintptr, n uint64, stream uint64, async bool) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	dl, r := d.deviceLoc(dst, n)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	sl, r := hostLoc(uint64(src))
	if r != cu.CUDA_SUCCESS && n > 0 {
		return r
	}
	return d.copyOn(t, stream, dl, sl, n, !async)
}

// MemcpyDtoH is cuMemcpyDtoH and cuMemcpyDtoHAsync (which completes before it
// returns: allowed, since the copy is then done in stream order).
func (d *Driver) MemcpyDtoH(t Thread, dst uintptr, src uint64, n uint64, stream uint64) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	sl, r := d.deviceLoc(src, n)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	dl, r := hostLoc(uint64(dst))
	if r != cu.CUDA_SUCCESS && n > 0 {
		return r
	}
	return d.copyOn(t, stream, dl, sl, n, true)
}

// MemcpyDtoD is cuMemcpyDtoD and cuMemcpyDtoDAsync: asynchronous to the host
// either way, as in CUDA.
func (d *Driver) MemcpyDtoD(t Thread, dst, src, n uint64, stream uint64) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	dl, r := d.deviceLoc(dst, n)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	sl, r := d.deviceLoc(src, n)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	return d.copyOn(t, stream, dl, sl, n, false)
}

// ---- 2D and 3D copies ------------------------------------------------------------

// Side is one side of a 2D or 3D copy, as CUDA_MEMCPY2D/3D describe it.
type Side struct {
	MemoryType cu.CUmemorytype
	Host       uintptr // HOST
	Device     uint64  // DEVICE, UNIFIED
	Array      uint64  // ARRAY: not supported
	X, Y, Z    uint64  // offset: bytes, rows, slices
	Pitch      uint64  // bytes per row
	Height     uint64  // rows per slice (3D)
}

// Copy3D is a 2D copy (Depth 1) or a 3D copy.
type Copy3D struct {
	Src, Dst             Side
	Width, Height, Depth uint64 // bytes per row, rows, slices
}

// rowAddr is the address of row y of slice z of a side at base.
func (s *Side) rowAddr(base uint64, y, z uint64) uint64 {
	return base + ((s.Z+z)*s.Height+s.Y+y)*s.Pitch + s.X
}

// rowOff is how far row y of slice z lies from the copy's first row.
func (s *Side) rowOff(y, z uint64) uint64 { return (z*s.Height + y) * s.Pitch }

// side resolves one side of a copy: where its first row starts, the extent
// from there to the end of its last row, and what kind of memory it is.
func (d *Driver) side(s *Side, c *Copy3D) (loc, uint64, Result) {
	rows := c.Height * c.Depth
	if (rows > 1 && s.Pitch < c.Width) || (c.Depth > 1 && s.Height < c.Height) {
		return loc{}, 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	var base uint64
	switch s.MemoryType {
	case cu.CU_MEMORYTYPE_HOST:
		base = uint64(s.Host)
	case cu.CU_MEMORYTYPE_DEVICE, cu.CU_MEMORYTYPE_UNIFIED:
		base = s.Device
	case cu.CU_MEMORYTYPE_ARRAY:
		return loc{}, 0, d.Refuse("copies to or from CUDA arrays")
	default:
		return loc{}, 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	first := s.rowAddr(base, 0, 0)
	span := s.rowAddr(base, c.Height-1, c.Depth-1) - first + c.Width
	var l loc
	var r Result
	switch s.MemoryType {
	case cu.CU_MEMORYTYPE_HOST:
		l, r = hostLoc(first)
	case cu.CU_MEMORYTYPE_DEVICE:
		l, r = d.deviceLoc(first, span)
	default:
		l, r = d.locate(first, span)
	}
	return l, span, r
}

// Memcpy3D is cuMemcpy2D, cuMemcpy2DUnaligned, cuMemcpy3D and their Async
// forms. Contiguous copies go in one piece; otherwise host-bound copies read
// the whole device span at once and scatter the rows here, and the others go
// row by row.
func (d *Driver) Memcpy3D(t Thread, c Copy3D, stream uint64, async bool) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	if c.Depth == 0 {
		c.Depth = 1
	}
	if c.Width == 0 || c.Height == 0 {
		return cu.CUDA_SUCCESS
	}
	if c.Src.Height == 0 {
		c.Src.Height = c.Height
	}
	if c.Dst.Height == 0 {
		c.Dst.Height = c.Height
	}
	src, srcSpan, r := d.side(&c.Src, &c)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	dst, dstSpan, r := d.side(&c.Dst, &c)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	ds, r := d.copyStream(t, stream, dst, src)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	rows := c.Height * c.Depth
	if srcSpan == c.Width*rows && dstSpan == c.Width*rows {
		return d.copy1(ds, dst, src, c.Width*rows, !async)
	}
	if src.dev != nil && dst.dev == nil {
		// Read the span once; the bytes between rows come along unused.
		if r := ds.wait(); r != cu.CUDA_SUCCESS {
			return r
		}
		stage := make([]byte, srcSpan)
		before := ds.submitted.Load()
		if r := ds.completes(before, ds.sess.s.CopyFromDevice(bg, stage, client.Addr(src.addr), ds.cs)); r != cu.CUDA_SUCCESS {
			return r
		}
		for z := uint64(0); z < c.Depth; z++ {
			for y := uint64(0); y < c.Height; y++ {
				off := c.Src.rowOff(y, z)
				copy(hostBytes(uintptr(dst.addr+c.Dst.rowOff(y, z)), c.Width), stage[off:off+c.Width])
			}
		}
		return cu.CUDA_SUCCESS
	}
	for z := uint64(0); z < c.Depth; z++ {
		for y := uint64(0); y < c.Height; y++ {
			from := loc{addr: src.addr + c.Src.rowOff(y, z), dev: src.dev}
			to := loc{addr: dst.addr + c.Dst.rowOff(y, z), dev: dst.dev}
			// Each row is asynchronous but for the last of a synchronous
			// copy: stream order makes it complete last.
			lastRow := z == c.Depth-1 && y == c.Height-1
			if r := d.copy1(ds, to, from, c.Width, !async && lastRow); r != cu.CUDA_SUCCESS {
				return r
			}
		}
	}
	if !async && dst.dev != nil && src.dev != nil {
		return d.fail(ds.sync())
	}
	return cu.CUDA_SUCCESS
}

// ---- memset -----------------------------------------------------------------------

// Memset is cuMemsetD8/D16/D32 (elem 1, 2, 4) and their Async forms, of count
// elements at dst.
func (d *Driver) Memset(t Thread, dst uint64, value uint32, elem int, count uint64, stream uint64) Result {
	return d.Memset2D(t, dst, 0, value, elem, count, 1, stream)
}

// Memset2D is cuMemsetD2D8/16/32 and their Async forms: height rows of width
// elements, pitch bytes apart.
func (d *Driver) Memset2D(t Thread, dst, pitch uint64, value uint32, elem int, width, height uint64, stream uint64) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	e := uint64(elem)
	if dst%e != 0 || width > 1<<50 {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	if width == 0 || height == 0 {
		return cu.CUDA_SUCCESS
	}
	rowBytes := width * e
	if height > 1 && pitch < rowBytes {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	if height == 1 {
		pitch = rowBytes
	}
	span := (height-1)*pitch + rowBytes
	l, r := d.locate(dst, span)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if l.dev == nil {
		if d.host.find(dst, span) == nil {
			return cu.CUDA_ERROR_INVALID_VALUE // only the shim's host memory is the device's to set
		}
		return d.hostMemset(t, stream, dst, pitch, value, elem, width, height)
	}
	ds, r := d.streamIn(stream, l.dev.sess)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if r := ds.wait(); r != cu.CUDA_SUCCESS {
		return r
	}
	if pitch == rowBytes {
		ds.submit()
		return d.fail(ds.sess.s.Memset(client.Addr(dst), value, elem, width*height, ds.cs))
	}
	for y := uint64(0); y < height; y++ {
		ds.submit()
		if err := ds.sess.s.Memset(client.Addr(dst+y*pitch), value, elem, width, ds.cs); err != nil {
			return d.fail(err)
		}
	}
	return cu.CUDA_SUCCESS
}

// hostMemset sets host memory the shim allocated, in stream order.
func (d *Driver) hostMemset(t Thread, stream, dst, pitch uint64, value uint32, elem int, width, height uint64) Result {
	ds, r := d.copyStream(t, stream, loc{addr: dst}, loc{addr: dst})
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if ds != nil {
		if r := ds.wait(); r != cu.CUDA_SUCCESS {
			return r
		}
		if err := ds.sync(); err != nil {
			return d.fail(err)
		}
	}
	var pat [4]byte
	for i := range pat {
		pat[i] = byte(value >> (8 * (i % elem)))
	}
	for y := uint64(0); y < height; y++ {
		row := hostBytes(uintptr(dst+y*pitch), width*uint64(elem))
		for i := range row {
			row[i] = pat[i%elem]
		}
	}
	return cu.CUDA_SUCCESS
}

// MemcpyPeer is cuMemcpyPeer and cuMemcpyPeerAsync: a device-to-device copy
// between contexts, which gpuos does within one device.
func (d *Driver) MemcpyPeer(t Thread, dst, dstCtx, src, srcCtx, n uint64, stream uint64, async bool) Result {
	if _, r := d.context(t, dstCtx); r != cu.CUDA_SUCCESS {
		return r
	}
	if _, r := d.context(t, srcCtx); r != cu.CUDA_SUCCESS {
		return r
	}
	return d.MemcpyDtoD(t, dst, src, n, stream)
}
