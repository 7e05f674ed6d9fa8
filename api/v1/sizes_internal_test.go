package v1

import "testing"

// The minimum element sizes bound slice allocation while decoding; they must be
// exactly what a zero element encodes to.
func TestMinElementSizes(t *testing.T) {
	var e Encoder
	(&DeviceInfo{}).encode(&e)
	if e.Len() != minDeviceInfoSize {
		t.Errorf("zero DeviceInfo encodes to %d bytes, minDeviceInfoSize is %d", e.Len(), minDeviceInfoSize)
	}
	e.Reset()
	(&ShmStat{Allowed: []ShmAccess{{}}}).Encode(&e)
	if n := e.Len() - len(Marshal(&ShmStat{})); n != minShmAccessSize {
		t.Errorf("zero ShmAccess encodes to %d bytes, minShmAccessSize is %d", n, minShmAccessSize)
	}
	if n := len(Marshal(&SessionStat{})); n != minSessionStatSize {
		t.Errorf("zero SessionStat encodes to %d bytes, minSessionStatSize is %d", n, minSessionStatSize)
	}
}
