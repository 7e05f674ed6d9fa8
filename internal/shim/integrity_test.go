package shim

import (
	"encoding/hex"
	"testing"
)

// The test suite of RFC 1319, appendix A.5.
func TestMD2(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "8350e5a3e24c153df2275c9f80692773"},
		{"a", "32ec01ec4a6dac72c0ab96fb34c0b5d1"},
		{"abc", "da853b0d3f88d99b30283a69e6ded6bb"},
		{"message digest", "ab4f496bfb2a530b219ff33031fe06b0"},
		{"abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b"},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "da33def2a42df13975352846c30338cd"},
		{"12345678901234567890123456789012345678901234567890123456789012345678901234567890", "d5976f79d83d3a0dc9806c3c66f3efd8"},
	}
	for _, tt := range tests {
		var m md2
		m.write([]byte(tt.in))
		got := m.sum()
		if hex.EncodeToString(got[:]) != tt.want {
			t.Errorf("MD2(%q) = %x, want %s", tt.in, got, tt.want)
		}
	}
	// Writing in pieces is writing at once.
	var a, b md2
	a.write([]byte("message digest"))
	b.write([]byte("mess"))
	b.write([]byte("age dig"))
	b.write([]byte("est"))
	if a.sum() != b.sum() {
		t.Error("MD2 of pieces differs")
	}
}

func TestMD2TableIsAPermutation(t *testing.T) {
	var seen [256]bool
	for _, v := range md2S {
		if seen[v] {
			t.Fatalf("%d appears twice", v)
		}
		seen[v] = true
	}
}

// hmacMD2 is HMAC: the inner hash keyed with 0x36, the outer with 0x5c.
func TestHMACMD2(t *testing.T) {
	key := integrityKey
	msg := []byte("gpuos")
	var ipad, opad [16]byte
	for i := range key {
		ipad[i], opad[i] = key[i]^0x36, key[i]^0x5c
	}
	var in md2
	in.write(append(ipad[:], msg...))
	inner := in.sum()
	var out md2
	out.write(append(opad[:], inner[:]...))
	if want := out.sum(); hmacMD2(key, msg) != want {
		t.Errorf("hmacMD2 = %x, want %x", hmacMD2(key, msg), want)
	}
}

func TestIntegrityValue(t *testing.T) {
	in := IntegrityInput{DriverVersion: 13000, PID: 4242, TID: 0xf79c1000, CudartTable: 0x7ffff6958240,
		CheckTable: 0x7ffff6958220, CheckFunc: 0x7ffff2aaf4a0,
		Devices: []IntegrityDevice{{UUID: [16]byte{1, 2, 3}, PCIBus: 0x19}}}
	if got := IntegrityValue(13000, 1, in); got != [2]uint64{0x3341181C03CB675C, 0x8ED383AA1F4CD1E8} {
		t.Errorf("version 13000: %#x", got)
	}
	if got := IntegrityValue(12081, 1, in); got != [2]uint64{0x1841181C03CB675C, 0x8ED383AA1F4CD1E8} {
		t.Errorf("version 12081: %#x", got)
	}
	a := IntegrityValue(13002, 1700000000, in)
	if a == IntegrityValue(13002, 1700000001, in) {
		t.Error("the value does not depend on the time")
	}
	in2 := in
	in2.Devices = []IntegrityDevice{{UUID: [16]byte{1, 2, 4}, PCIBus: 0x19}}
	if a == IntegrityValue(13002, 1700000000, in2) {
		t.Error("the value does not depend on the devices")
	}
	if a != IntegrityValue(13002, 1700000000, in) {
		t.Error("the value is not a function of its input")
	}
}
