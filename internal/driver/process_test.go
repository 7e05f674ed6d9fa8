package driver

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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

// TestWatchYields: the driver process logs when its poll loops' long
// yields grew since the last look, with how many, and says nothing when
// they did not.
func TestWatchYields(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var count atomic.Uint64
	looks := make(chan struct{}, 1)
	longYields := func() uint64 {
		select {
		case looks <- struct{}{}:
		default:
		}
		return count.Load()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { watchYields(ctx, log, time.Millisecond, longYields); close(done) }()
	// look returns once a look that began after it was called has ended,
	// its line written: the first token may be one left from before, the
	// second's look began after look was called, the third's after the
	// second's ended.
	look := func() {
		for range 3 {
			<-looks
		}
	}
	look()
	if s := buf.String(); s != "" {
		t.Fatalf("logged with no long yields: %s", s)
	}
	count.Store(3)
	look()
	if s := buf.String(); strings.Count(s, "level=INFO") != 1 || !strings.Contains(s, "long_yields=3") {
		t.Fatalf("after 3 long yields the log is %q, want one line with long_yields=3", s)
	}
	look()
	if s := buf.String(); strings.Count(s, "level=INFO") != 1 {
		t.Fatalf("logged again with no new long yields: %q", s)
	}
	count.Store(5)
	look()
	if s := buf.String(); strings.Count(s, "level=INFO") != 2 || !strings.Contains(s, "long_yields=2 over=200µs total=5") {
		t.Fatalf("after 2 more the log is %q, want a second line with long_yields=2 total=5", s)
	}
	cancel()
	<-done
}

// syncBuffer is a bytes.Buffer for a logger on another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
