package driver

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

func TestOutsideArg(t *testing.T) {
	const floor, lo, hi = 4 << 20, 0x1000_0000, 0x2000_0000
	layout := []backend.Param{{Offset: 0, Size: 8}, {Offset: 8, Size: 4}, {Offset: 16, Size: 8}}
	pack := func(a uint64, b uint32, c uint64) []byte {
		p := make([]byte, 24)
		binary.LittleEndian.PutUint64(p, a)
		binary.LittleEndian.PutUint32(p[8:], b)
		binary.LittleEndian.PutUint64(p[16:], c)
		return p
	}
	global := func(v uint64) bool { return v == 0x9000 }
	tests := []struct {
		name     string
		params   []byte
		pointers []bool // nil: every 8-byte parameter is checked
		wantOK   bool
		wantArg  int
	}{
		{"pointers inside and null", pack(lo, 7, 0), nil, true, 0},
		{"last byte of the window", pack(hi-1, 0xffffffff, lo+8), nil, true, 0},
		{"4-byte scalars are not checked", pack(lo, 0xdeadbeef, lo), nil, true, 0},
		{"a module global the session looked up", pack(0x9000, 0, lo), nil, true, 0},
		{"pointer past the end", pack(lo, 0, hi), nil, false, 2},
		{"pointer below", pack(lo-8, 0, lo), nil, false, 0},
		{"an 8-byte scalar of SASS that could be an address: the false positive", pack(lo, 0, 0x7f00_0000_0000), nil, false, 2},
		{"an 8-byte scalar PTX shows is no pointer", pack(lo, 0, 0x7f00_0000_0000), []bool{true, false, false}, true, 0},
		{"a seed is no address", pack(lo, 0, 7), nil, true, 0},
		{"a count below the floor is no address", pack(196608, 0, lo), nil, true, 0},
		{"the last value below the floor", pack(floor-1, 0, lo), nil, true, 0},
		{"the floor", pack(floor, 0, lo), nil, false, 0},
		{"CUB's ArgMax initial value {1, -FLT_MAX} is no address", pack(lo, 0, 0xff7f_ffff_0000_0001), nil, true, 0},
		{"a double is no address", pack(lo, 0, math.Float64bits(0.37)), nil, true, 0},
		{"a negative number is no address", pack(lo, 0, 0xffff_ffff_ffff_fff6), nil, true, 0},
		{"the last value below 2^57 could be one", pack(lo, 0, noAddressFrom-1), nil, false, 2},
		{"a pointer PTX shows is one", pack(lo, 0, hi+64), []bool{true, false, true}, false, 2},
		{"short buffer: nothing to read", pack(lo, 0, 12345)[:12], nil, true, 0},
	}
	// A structure of two ints at a 4-byte offset, after a 4-byte count.
	packed := []backend.Param{{Offset: 0, Size: 8}, {Offset: 8, Size: 4}, {Offset: 12, Size: 8}}
	odd := make([]byte, 20)
	binary.LittleEndian.PutUint64(odd, lo)
	binary.LittleEndian.PutUint64(odd[12:], 0x0000_0001_0000_1000)
	if _, _, ok := outsideArg(odd, packed, nil, floor, lo, hi, global); !ok {
		t.Error("8 bytes at an offset that is not a multiple of 8 were taken for a pointer")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, _, ok := outsideArg(tt.params, layout, tt.pointers, floor, lo, hi, global)
			if ok != tt.wantOK || (!ok && i != tt.wantArg) {
				t.Errorf("outsideArg = argument %d, ok %v; want %d, %v", i, ok, tt.wantArg, tt.wantOK)
			}
		})
	}
}

func TestFloorOf(t *testing.T) {
	tests := []struct {
		name string
		maps string
		want uint64
	}{
		{"non-PIE Go binary", "00400000-00c5b000 r-xp 00000000 08:01 1234 /usr/bin/gpuos\nc000000000-c004000000 rw-p 00000000 00:00 0\n", 0x400000},
		{"PIE binary: at most 4 MiB", "55d0c8a00000-55d0c8a2c000 r--p 00000000 08:01 1234 /usr/bin/gpuos\n", mostAddressFloor},
		{"something mapped low", "00010000-00011000 rw-p 00000000 00:00 0\n00400000-00c5b000 r-xp 00000000 08:01 1234 /x\n", 0x10000},
		{"mapped at 0: at least 64 KiB", "00000000-00001000 rw-p 00000000 00:00 0\n", leastAddressFloor},
		{"unreadable", "", leastAddressFloor},
		{"garbage", "zz-yy\n", leastAddressFloor},
	}
	for _, tt := range tests {
		if got := floorOf([]byte(tt.maps)); got != tt.want {
			t.Errorf("%s: floorOf = %#x, want %#x", tt.name, got, tt.want)
		}
	}
	if f := addressFloor(); f < leastAddressFloor || f > mostAddressFloor {
		t.Errorf("this process's address floor %#x is outside [%#x, %#x]", f, leastAddressFloor, mostAddressFloor)
	}
}

// FuzzFloorOf: whatever /proc/self/maps says, the floor stays within its
// bounds.
func FuzzFloorOf(f *testing.F) {
	f.Add([]byte("00400000-00c5b000 r-xp 00000000 08:01 1234 /usr/bin/gpuos\n"))
	f.Add([]byte("55d0c8a00000-55d0c8a2c000 r--p 00000000 08:01 1234 /usr/bin/gpuos\n"))
	f.Add([]byte("-\n"))
	f.Fuzz(func(t *testing.T, maps []byte) {
		if v := floorOf(maps); v < leastAddressFloor || v > mostAddressFloor {
			t.Fatalf("floorOf = %#x, outside [%#x, %#x]", v, leastAddressFloor, mostAddressFloor)
		}
	})
}
