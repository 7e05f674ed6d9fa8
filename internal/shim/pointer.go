package shim

import (
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// PtrValue is the value of a pointer attribute: Size bytes (1, 4 or 8) of V,
// little-endian, written where the application's data pointer points.
type PtrValue struct {
	Size uint8
	V    uint64
}

// pointerAttrSize is how many bytes each attribute writes: booleans are C
// bools, enumerations and ordinals 4 bytes, handles, addresses and sizes 8.
var pointerAttrSize = map[cu.CUpointer_attribute]uint8{
	cu.CU_POINTER_ATTRIBUTE_CONTEXT:                    8,
	cu.CU_POINTER_ATTRIBUTE_MEMORY_TYPE:                4,
	cu.CU_POINTER_ATTRIBUTE_DEVICE_POINTER:             8,
	cu.CU_POINTER_ATTRIBUTE_HOST_POINTER:               8,
	cu.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:                1,
	cu.CU_POINTER_ATTRIBUTE_BUFFER_ID:                  8,
	cu.CU_POINTER_ATTRIBUTE_IS_MANAGED:                 1,
	cu.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:             4,
	cu.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: 1,
	cu.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:           8,
	cu.CU_POINTER_ATTRIBUTE_RANGE_SIZE:                 8,
	cu.CU_POINTER_ATTRIBUTE_MAPPED:                     1,
	cu.CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:       8,
	cu.CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: 1,
	cu.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:               4,
	cu.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:             8,
	cu.CU_POINTER_ATTRIBUTE_MAPPING_SIZE:               8,
	cu.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:          8,
	cu.CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:            8,
	cu.CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:   1,
}

// deviceInvalid is CU_DEVICE_INVALID (-2) as the 4 bytes an ordinal is written in.
const deviceInvalid = 0xFFFFFFFE // int32(-2)

// accessReadWrite is CU_POINTER_ATTRIBUTE_ACCESS_FLAGS of ordinary memory
// (CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE).
const accessReadWrite = 3

// pointerInfo is what the shim knows about an address.
type pointerInfo struct {
	memType    cu.CUmemorytype
	ctx        *ctxObj // nil for host memory of no context and a library's globals
	dev        *device // the device of device memory
	base, size uint64
	id         uint64
}

func (d *Driver) pointerInfo(ptr uint64) (pointerInfo, bool) {
	if a := d.mem.find(ptr, 1); a != nil {
		return pointerInfo{memType: cu.CU_MEMORYTYPE_DEVICE, ctx: a.ctx, dev: a.sess.dev, base: a.base, size: a.size, id: a.id}, true
	}
	if h := d.host.find(ptr, 1); h != nil {
		return pointerInfo{memType: cu.CU_MEMORYTYPE_HOST, ctx: h.ctx, base: h.base, size: h.size, id: h.id}, true
	}
	return pointerInfo{}, false
}

// PointerGetAttribute is cuPointerGetAttribute: CUDA_ERROR_INVALID_VALUE for
// an address that is neither device memory nor host memory the shim knows.
func (d *Driver) PointerGetAttribute(attr cu.CUpointer_attribute, ptr uint64) (PtrValue, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return PtrValue{}, r
	}
	size, ok := pointerAttrSize[attr]
	if !ok {
		if attr == cu.CU_POINTER_ATTRIBUTE_P2P_TOKENS {
			return PtrValue{}, d.Refuse("CU_POINTER_ATTRIBUTE_P2P_TOKENS")
		}
		return PtrValue{}, cu.CUDA_ERROR_INVALID_VALUE
	}
	info, ok := d.pointerInfo(ptr)
	if !ok {
		return PtrValue{}, cu.CUDA_ERROR_INVALID_VALUE
	}
	v, r := info.attribute(attr, ptr)
	return PtrValue{Size: size, V: v}, r
}

func (p pointerInfo) attribute(attr cu.CUpointer_attribute, ptr uint64) (uint64, Result) {
	device := p.memType == cu.CU_MEMORYTYPE_DEVICE
	switch attr {
	case cu.CU_POINTER_ATTRIBUTE_CONTEXT:
		if p.ctx == nil && p.dev != nil {
			// A library's global lives in every context of its device:
			// the primary context stands for them.
			p.dev.mu.Lock()
			c := p.dev.primary
			p.dev.mu.Unlock()
			if c != nil {
				return c.h, cu.CUDA_SUCCESS
			}
		}
		if p.ctx == nil {
			return 0, cu.CUDA_SUCCESS
		}
		return p.ctx.h, cu.CUDA_SUCCESS
	case cu.CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		return uint64(p.memType), cu.CUDA_SUCCESS
	case cu.CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		if !device {
			return 0, cu.CUDA_ERROR_INVALID_VALUE // host memory is not mapped for kernels
		}
		return ptr, cu.CUDA_SUCCESS
	case cu.CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if device {
			return 0, cu.CUDA_ERROR_INVALID_VALUE
		}
		return ptr, cu.CUDA_SUCCESS
	case cu.CU_POINTER_ATTRIBUTE_BUFFER_ID, cu.CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		return p.id, cu.CUDA_SUCCESS
	case cu.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		switch {
		case p.dev != nil:
			return uint64(p.dev.ordinal), cu.CUDA_SUCCESS
		case p.ctx != nil:
			return uint64(p.ctx.dev.ordinal), cu.CUDA_SUCCESS
		}
		return 0, cu.CUDA_SUCCESS
	case cu.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, cu.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		return p.base, cu.CUDA_SUCCESS
	case cu.CU_POINTER_ATTRIBUTE_RANGE_SIZE, cu.CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		return p.size, cu.CUDA_SUCCESS
	case cu.CU_POINTER_ATTRIBUTE_MAPPED:
		return 1, cu.CUDA_SUCCESS
	case cu.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		return accessReadWrite, cu.CUDA_SUCCESS
	}
	// SYNC_MEMOPS, IS_MANAGED, IS_LEGACY_CUDA_IPC_CAPABLE, ALLOWED_HANDLE_TYPES,
	// IS_GPU_DIRECT_RDMA_CAPABLE, MEMPOOL_HANDLE, IS_HW_DECOMPRESS_CAPABLE:
	// none of these apply to gpuos memory.
	return 0, cu.CUDA_SUCCESS
}

// PointerGetAttributes is cuPointerGetAttributes: unlike PointerGetAttribute
// it succeeds for an unknown address, with every value zero (and the device
// ordinal CU_DEVICE_INVALID).
func (d *Driver) PointerGetAttributes(attrs []cu.CUpointer_attribute, ptr uint64) ([]PtrValue, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	info, known := d.pointerInfo(ptr)
	out := make([]PtrValue, len(attrs))
	for i, attr := range attrs {
		size, ok := pointerAttrSize[attr]
		if !ok {
			if attr == cu.CU_POINTER_ATTRIBUTE_P2P_TOKENS {
				return nil, d.Refuse("CU_POINTER_ATTRIBUTE_P2P_TOKENS")
			}
			return nil, cu.CUDA_ERROR_INVALID_VALUE
		}
		out[i].Size = size
		switch {
		case !known && attr == cu.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
			out[i].V = uint64(deviceInvalid)
		case known:
			v, r := info.attribute(attr, ptr)
			if r == cu.CUDA_SUCCESS {
				out[i].V = v
			}
		}
	}
	return out, cu.CUDA_SUCCESS
}

// PointerSetAttribute is cuPointerSetAttribute: only SYNC_MEMOPS can be set,
// and every gpuos copy is already synchronous with respect to other copies.
func (d *Driver) PointerSetAttribute(attr cu.CUpointer_attribute, ptr uint64) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	if attr != cu.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	if d.mem.find(ptr, 1) == nil {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	return cu.CUDA_SUCCESS
}
