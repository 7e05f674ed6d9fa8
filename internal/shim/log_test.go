package shim

import (
	"bytes"
	"strings"
	"testing"
)

func TestLogOnce(t *testing.T) {
	var b bytes.Buffer
	l := NewLog(&b, TraceOff)
	l.Unsupported("cuGraphCreate")
	l.Unsupported("cuGraphCreate")
	l.Unsupported("cuArrayCreate")
	if got := strings.Count(b.String(), "\n"); got != 2 {
		t.Errorf("%d lines, want 2:\n%s", got, b.String())
	}
	if !strings.Contains(b.String(), "gpuos-shim: cuGraphCreate is not supported") {
		t.Errorf("log: %q", b.String())
	}
	if l.Tracing(TraceTables) || !NewLog(&b, TraceCalls).Tracing(TraceTables) {
		t.Error("trace levels")
	}
	var nilLog *Log
	nilLog.Printf("nothing") // a nil log is silent
}
