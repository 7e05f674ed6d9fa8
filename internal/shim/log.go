package shim

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

// Log is where the shim reports what the application should know: refused
// entry points, an unreachable daemon, export-table traffic when tracing. It
// writes one line per report, unbuffered, so nothing is lost when the program
// exits without warning.
type Log struct {
	mu    sync.Mutex // serializes writes
	w     io.Writer
	trace atomic.Int32
	once  sync.Map // key -> struct{}: what was already reported once
}

// Trace levels (GPUOS_SHIM_TRACE).
const (
	TraceOff    = 0
	TraceTables = 1 // export-table lookups and every slot call with its arguments
	TraceCalls  = 2 // also every intercepted call that fails
)

// NewLog returns a log writing to w with the given trace level.
func NewLog(w io.Writer, trace int) *Log {
	l := &Log{w: w}
	l.trace.Store(int32(trace))
	return l
}

// LogFromEnv opens the log the environment asks for: $GPUOS_SHIM_LOG (a file,
// appended to) or stderr, traced at level $GPUOS_SHIM_TRACE.
func LogFromEnv() *Log {
	var w io.Writer = os.Stderr
	if p := os.Getenv("GPUOS_SHIM_LOG"); p != "" {
		if f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			w = f
		} else {
			fmt.Fprintf(os.Stderr, "gpuos-shim: cannot open GPUOS_SHIM_LOG %s: %v; logging to stderr\n", p, err)
		}
	}
	level, _ := strconv.Atoi(os.Getenv("GPUOS_SHIM_TRACE"))
	return NewLog(w, level)
}

// Tracing reports whether tracing at level is on.
func (l *Log) Tracing(level int) bool { return l != nil && int(l.trace.Load()) >= level }

// Printf writes one line.
func (l *Log) Printf(format string, args ...any) {
	if l == nil {
		return
	}
	line := fmt.Appendf([]byte("gpuos-shim: "), format, args...)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	l.mu.Lock()
	l.w.Write(line)
	l.mu.Unlock()
}

// Once writes a line the first time key is reported, and reports whether it
// did.
func (l *Log) Once(key, format string, args ...any) bool {
	if l == nil {
		return false
	}
	if _, seen := l.once.LoadOrStore(key, struct{}{}); seen {
		return false
	}
	l.Printf(format, args...)
	return true
}

// Unsupported reports, once per name, an entry point the shim refuses.
func (l *Log) Unsupported(name string) {
	l.Once("unsupported:"+name, "%s is not supported by gpuos: returning CUDA_ERROR_NOT_SUPPORTED", name)
}
