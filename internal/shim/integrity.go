package shim

import (
	"encoding/binary"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// The CUDA runtime checks its driver through slot 1 of the integrity-check
// export table: fn(version, unixSeconds, out *[2]uint64). It computes the same
// value itself and refuses to work (cudaErrorSoftwareValidityNotEstablished)
// when the driver's answer differs. As documented by ZLUDA's reverse
// engineering, the value is HMAC-MD2 (RFC 1319, RFC 2104) with a fixed 16-byte
// key over:
//
//	u32 driver version (what cuDriverGetVersion reports)
//	u32 version (the first argument)
//	u32 process id
//	u32 thread id (the low 32 bits of pthread_self)
//	u64 address of the runtime interface table
//	u64 address of the integrity-check table
//	u64 address of the function in its slot 1
//	u64 unix seconds (the second argument)
//	then per device: its 16-byte UUID, and as i32 its PCI domain, bus and device
//
// except for versions ending in 0 or 1, whose answers are constants. The out
// array receives the 16 digest bytes in memory order.

// integrityKey is the HMAC key.
var integrityKey = [16]byte{0x14, 0x6A, 0xDD, 0xAE, 0x53, 0xA9, 0xA7, 0x52, 0xAA, 0x08, 0x41, 0x36, 0x0B, 0xF5, 0x5A, 0x9F}

// integrityConstants are the answers for versions ending in 0 and 1.
var integrityConstants = [2][2]uint64{
	{0x3341181C03CB675C, 0x8ED383AA1F4CD1E8},
	{0x1841181C03CB675C, 0x8ED383AA1F4CD1E8},
}

// IntegrityInput is what the integrity value covers besides the arguments.
type IntegrityInput struct {
	DriverVersion           uint32
	PID, TID                uint32
	CudartTable, CheckTable uint64
	CheckFunc               uint64
	Devices                 []IntegrityDevice
}

// IntegrityDevice is a device's part of the integrity value.
type IntegrityDevice struct {
	UUID                      [16]byte
	PCIDomain, PCIBus, PCIDev int32
}

// IntegrityValue computes the answer of the integrity-check slot.
func IntegrityValue(version uint32, unixSeconds uint64, in IntegrityInput) [2]uint64 {
	if v := version % 10; v < 2 {
		return integrityConstants[v]
	}
	msg := integrityMessage(version, unixSeconds, in)
	for _, dv := range in.Devices {
		msg = deviceMessage(msg, dv)
	}
	sum := hmacMD2(integrityKey, msg)
	le := binary.LittleEndian
	return [2]uint64{le.Uint64(sum[:8]), le.Uint64(sum[8:])}
}

// integrityMessage is the fixed part of the message: 48 bytes, little-endian.
func integrityMessage(version uint32, unixSeconds uint64, in IntegrityInput) []byte {
	le := binary.LittleEndian
	msg := make([]byte, 0, 48+28*len(in.Devices))
	msg = le.AppendUint32(msg, in.DriverVersion)
	msg = le.AppendUint32(msg, version)
	msg = le.AppendUint32(msg, in.PID)
	msg = le.AppendUint32(msg, in.TID)
	msg = le.AppendUint64(msg, in.CudartTable)
	msg = le.AppendUint64(msg, in.CheckTable)
	msg = le.AppendUint64(msg, in.CheckFunc)
	msg = le.AppendUint64(msg, unixSeconds)
	return msg
}

// deviceMessage appends a device's 28 bytes to msg.
func deviceMessage(msg []byte, dv IntegrityDevice) []byte {
	le := binary.LittleEndian
	msg = append(msg, dv.UUID[:]...)
	msg = le.AppendUint32(msg, uint32(dv.PCIDomain))
	msg = le.AppendUint32(msg, uint32(dv.PCIBus))
	return le.AppendUint32(msg, uint32(dv.PCIDev))
}

// IntegrityDevices is every device's part of the integrity value.
func (d *Driver) IntegrityDevices() []IntegrityDevice {
	var out []IntegrityDevice
	for _, dv := range d.devices {
		out = append(out, IntegrityDevice{
			UUID:      dv.info.UUID,
			PCIDomain: dv.attr(cu.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
			PCIBus:    dv.attr(cu.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
			PCIDev:    dv.attr(cu.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
		})
	}
	return out
}

// hmacMD2 is HMAC (RFC 2104) over MD2 with a key of exactly one block.
func hmacMD2(key [16]byte, msg []byte) [16]byte {
	var ipad, opad [16]byte
	for i := range key {
		ipad[i] = key[i] ^ 0x36
		opad[i] = key[i] ^ 0x5c
	}
	var inner md2
	inner.write(ipad[:])
	inner.write(msg)
	in := inner.sum()
	var outer md2
	outer.write(opad[:])
	outer.write(in[:])
	return outer.sum()
}

// md2 is the MD2 message digest (RFC 1319), fed a byte at a time: x is the
// 48-byte state (the digest so far, the block being filled, and their xor),
// c the checksum, updated with every byte, l its last byte, n the bytes of
// the block so far. This is the representation in which the intermediate
// states of the runtime's computation were published (integrity_test.go).
type md2 struct {
	x    [48]byte
	c    [16]byte
	n, l byte
}

// md2S is MD2's substitution table, a permutation of 0..255 built from the
// digits of pi (RFC 1319, section 3.2).
var md2S = [256]byte{
	41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19,
	98, 167, 5, 243, 192, 199, 115, 140, 152, 147, 43, 217, 188, 76, 130, 202,
	30, 155, 87, 60, 253, 212, 224, 22, 103, 66, 111, 24, 138, 23, 229, 18,
	190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245, 142, 187, 47, 238, 122,
	169, 104, 121, 145, 21, 178, 7, 63, 148, 194, 16, 137, 11, 34, 95, 33,
	128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191, 247, 151, 3,
	255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198,
	79, 184, 56, 210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4, 241,
	69, 157, 112, 89, 100, 113, 135, 32, 134, 91, 207, 101, 230, 45, 168, 2,
	27, 96, 37, 173, 174, 176, 185, 246, 28, 70, 97, 105, 52, 64, 126, 15,
	85, 71, 163, 35, 221, 81, 175, 58, 195, 92, 249, 206, 186, 197, 234, 38,
	44, 83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77, 82,
	106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74,
	120, 136, 149, 139, 227, 99, 232, 109, 233, 203, 213, 254, 59, 0, 29, 57,
	242, 239, 183, 14, 102, 88, 208, 228, 166, 119, 114, 248, 235, 117, 75, 10,
	49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17, 131, 20,
}

func (m *md2) write(p []byte) {
	for _, b := range p {
		m.writeByte(b)
	}
}

func (m *md2) writeByte(b byte) {
	n := m.n
	m.x[16+n] = b
	m.x[32+n] = m.x[n] ^ b
	m.c[n] ^= md2S[b^m.l]
	m.l = m.c[n]
	m.n = (n + 1) & 15
	if m.n == 0 {
		m.compress()
	}
}

// compress runs the 18 rounds over the 48-byte state once a block is in.
func (m *md2) compress() {
	var t byte
	for j := 0; j < 18; j++ {
		for k := range m.x {
			m.x[k] ^= md2S[t]
			t = m.x[k]
		}
		t += byte(j)
	}
}

// sum pads the message, appends the checksum and returns the digest. It
// leaves m in the state after the checksum block.
func (m *md2) sum() [16]byte {
	pad := 16 - m.n
	for i := byte(0); i < pad; i++ {
		m.writeByte(pad)
	}
	c := m.c
	m.write(c[:])
	var out [16]byte
	copy(out[:], m.x[:16])
	return out
}
