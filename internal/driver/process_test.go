package driver

import (
	"testing"
	"time"
)

// TestSliceTarget: $GPUOS_SCHED_SLICE is a positive duration or "off";
// anything else stops the driver with an error rather than being ignored.
func TestSliceTarget(t *testing.T) {
	for _, tt := range []struct {
		env     string
		want    time.Duration
		wantErr bool
	}{
		{"", 0, false},
		{"off", -1, false},
		{"250us", 250 * time.Microsecond, false},
		{"0", 0, true},
		{"-5us", 0, true},
		{"fast", 0, true},
	} {
		t.Setenv(SliceEnv, tt.env)
		have, err := sliceTarget()
		if (err != nil) != tt.wantErr || have != tt.want {
			t.Errorf("%s=%q: have %v, %v; want %v, error %v", SliceEnv, tt.env, have, err, tt.want, tt.wantErr)
		}
	}
}
