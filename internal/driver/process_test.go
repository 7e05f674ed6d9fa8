package driver

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/sched"
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

// TestSchedSwitches: the scheduler's switches for measuring map onto
// sched.Options (and $GPUOS_SCHED_LOWSPIN=0 onto Options.NoLowClassSpin);
// with none set the options are the zero value, the defaults; a malformed
// duration or spinner switch is an error, not the default.
func TestSchedSwitches(t *testing.T) {
	for _, tt := range []struct {
		env           map[string]string
		want          sched.Options
		wantNoLowSpin bool
		wantErr       bool
	}{
		{env: nil, want: sched.Options{}},
		{env: map[string]string{LowClassSpinEnv: "0"}, wantNoLowSpin: true},
		{env: map[string]string{LowClassSpinEnv: "1"}, want: sched.Options{LowClassSpin: true}},
		{env: map[string]string{LowClassSpinEnv: "on"}, wantErr: true},
		{env: map[string]string{SpareKicksEnv: "0", NoExpressEnv: "0", NoHighFirstEnv: "0", HighClassStartEnv: "0", LowClassPaceEnv: "0"},
			want: sched.Options{NoSpareKicks: true, NoExpress: true, NoHighFirst: true, NoHighClassStart: true, NoLowClassPace: true}},
		{env: map[string]string{BlockingWaitEnv: "block", LowClassPollEnv: "off", SliceEnv: "50us"},
			want: sched.Options{BlockingWait: true, LowClassPoll: -1, SliceTarget: 50 * time.Microsecond}},
		{env: map[string]string{LowClassPollEnv: "soon"}, wantErr: true},
		{env: map[string]string{SliceEnv: "-1ms"}, wantErr: true},
		{env: map[string]string{EpisodeHoldEnv: "20ms"}, want: sched.Options{EpisodeHold: 20 * time.Millisecond}},
		{env: map[string]string{EpisodeHoldEnv: "off"}, want: sched.Options{EpisodeHold: -1}},
		{env: map[string]string{EpisodeHoldEnv: "0"}, wantErr: true},
		{env: map[string]string{EpisodeHoldEnv: "soon"}, wantErr: true},
	} {
		for _, name := range []string{LowClassSpinEnv, SpareKicksEnv, NoExpressEnv, NoHighFirstEnv, HighClassStartEnv,
			LowClassPaceEnv, BlockingWaitEnv, LowClassPollEnv, SliceEnv, EpisodeHoldEnv} {
			t.Setenv(name, tt.env[name])
		}
		have, noLowSpin, err := schedSwitches()
		if (err != nil) != tt.wantErr {
			t.Errorf("%v: error %v, want an error %v", tt.env, err, tt.wantErr)
			continue
		}
		if err == nil && (!reflect.DeepEqual(have, tt.want) || noLowSpin != tt.wantNoLowSpin) {
			t.Errorf("%v: have %+v, NoLowClassSpin %v; want %+v, %v", tt.env, have, noLowSpin, tt.want, tt.wantNoLowSpin)
		}
	}
}

// TestLogLongYields: the driver process logs its poll loops' long yields
// when they grew since the last look, with how many, and says nothing when
// they did not.
func TestLogLongYields(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	seen := logLongYields(log, 0, 0)
	if s := buf.String(); s != "" {
		t.Fatalf("logged with no long yields: %s", s)
	}
	seen = logLongYields(log, seen, 3)
	if s := buf.String(); strings.Count(s, "level=INFO") != 1 || !strings.Contains(s, "long_yields=3") {
		t.Fatalf("after 3 long yields the log is %q, want one line with long_yields=3", s)
	}
	seen = logLongYields(log, seen, 3)
	if s := buf.String(); strings.Count(s, "level=INFO") != 1 {
		t.Fatalf("logged again with no new long yields: %q", s)
	}
	logLongYields(log, seen, 5)
	if s := buf.String(); strings.Count(s, "level=INFO") != 2 || !strings.Contains(s, "long_yields=2 over=200µs total=5") {
		t.Fatalf("after 2 more the log is %q, want a second line with long_yields=2 total=5", s)
	}
}
