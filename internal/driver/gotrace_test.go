package driver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseTraceWindow(t *testing.T) {
	for _, tt := range []struct {
		in          string
		after, span time.Duration
		ok          bool
	}{
		{"", 0, time.Second, true},
		{"8s+1s", 8 * time.Second, time.Second, true},
		{"0s+250ms", 0, 250 * time.Millisecond, true},
		{"8s", 0, 0, false},
		{"8s+0s", 0, 0, false},
		{"-1s+1s", 0, 0, false},
		{"x+1s", 0, 0, false},
		{"1s+x", 0, 0, false},
	} {
		after, span, err := parseTraceWindow(tt.in)
		if (err == nil) != tt.ok || after != tt.after || span != tt.span {
			t.Errorf("parseTraceWindow(%q) = %v, %v, %v; want %v, %v, ok %v", tt.in, after, span, err, tt.after, tt.span, tt.ok)
		}
	}
}

// TestWindowRecordings: each kind's window is written, a Go execution trace
// or a CPU profile (gzipped protocol buffers); a window it cannot read is an
// error naming its variable, even with no file asked for.
func TestWindowRecordings(t *testing.T) {
	for _, tt := range []struct {
		name  string
		r     windowRecorder
		magic []byte
	}{
		{"go trace", goTraceWindow, []byte("go 1.")},
		{"cpu profile", cpuProfileWindow, []byte{0x1f, 0x8b}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "driver.out")
			t.Setenv(tt.r.fileEnv, path)
			t.Setenv(tt.r.windowEnv, "10ms+50ms")
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			done, err := tt.r.startWindow(context.Background(), log)
			if err != nil || done == nil {
				t.Fatalf("startWindow = %v, %v", done, err)
			}
			<-done
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, tt.magic) {
				t.Fatalf("%s does not start as a %s: %q", path, tt.name, b[:min(len(b), 16)])
			}

			t.Setenv(tt.r.windowEnv, "soon")
			if _, err := tt.r.startWindow(context.Background(), log); err == nil || !strings.Contains(err.Error(), tt.r.windowEnv) {
				t.Fatalf("a window it cannot read: %v, want an error naming $%s", err, tt.r.windowEnv)
			}
			t.Setenv(tt.r.fileEnv, "")
			if done, err := tt.r.startWindow(context.Background(), log); done != nil || err == nil {
				t.Fatalf("unset file but bad window: %v, %v; want the window's error", done, err)
			}
		})
	}
}

// TestWindowTraceCanceled: a driver that stops before the window writes none.
func TestWindowTraceCanceled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driver.trace")
	t.Setenv(goTraceEnv, path)
	t.Setenv(goTraceWindowEnv, "1h+1s")
	ctx, cancel := context.WithCancel(context.Background())
	done, err := goTraceWindow.startWindow(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("stat %s = %v, want none written", path, err)
	}
}
