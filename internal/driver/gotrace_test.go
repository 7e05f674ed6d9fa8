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

// TestWindowTrace: the window's trace is written, a Go execution trace.
func TestWindowTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driver.trace")
	t.Setenv(goTraceEnv, path)
	t.Setenv(goTraceWindowEnv, "10ms+50ms")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	done, err := startWindowTrace(context.Background(), log)
	if err != nil || done == nil {
		t.Fatalf("startWindowTrace = %v, %v", done, err)
	}
	<-done
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Fatalf("%s does not start as a Go trace: %q", path, b[:min(len(b), 16)])
	}

	t.Setenv(goTraceWindowEnv, "soon")
	if _, err := startWindowTrace(context.Background(), log); err == nil {
		t.Fatal("a window it cannot read: no error")
	}
	t.Setenv(goTraceEnv, "")
	if done, err := startWindowTrace(context.Background(), log); done != nil || err == nil {
		t.Fatalf("unset file but bad window: %v, %v; want the window's error", done, err)
	}
}

// TestWindowTraceCanceled: a driver that stops before the window writes none.
func TestWindowTraceCanceled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driver.trace")
	t.Setenv(goTraceEnv, path)
	t.Setenv(goTraceWindowEnv, "1h+1s")
	ctx, cancel := context.WithCancel(context.Background())
	done, err := startWindowTrace(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("stat %s = %v, want none written", path, err)
	}
}

// TestWindowCPUProfile: the CPU profile's window is written, a profile
// (gzipped protocol buffers); a window it cannot read is an error.
func TestWindowCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driver.pprof")
	t.Setenv(cpuProfileEnv, path)
	t.Setenv(cpuProfileWindowEnv, "0s+50ms")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	done, err := cpuProfileWindow.startWindow(context.Background(), log)
	if err != nil || done == nil {
		t.Fatalf("startWindow = %v, %v", done, err)
	}
	<-done
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("%s does not start as a gzipped profile: %q", path, b[:min(len(b), 16)])
	}
	t.Setenv(cpuProfileWindowEnv, "later")
	if _, err := cpuProfileWindow.startWindow(context.Background(), log); err == nil || !strings.Contains(err.Error(), cpuProfileWindowEnv) {
		t.Fatalf("a window it cannot read: %v, want an error naming $%s", err, cpuProfileWindowEnv)
	}
}
