package driver

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// Launch latency stages, a diagnostic: with $GPUOS_LATENCY_LOG set, each
// session times every launch command it serves — received (the request
// handled), issued (the backend's launch called and returned), done (its
// completion reported) — and when it ends appends their percentiles and its
// slowest commands' stages to that file. It tells where a latency-critical
// tenant's tail comes from: the scheduler (received to issue), the driver
// call, or the GPU and completion tracking (issued to done); what is not in
// it happened in the client or between the processes.
const latencyEnv = "GPUOS_LATENCY_LOG"

var latencyLog = sync.OnceValue(func() string { return os.Getenv(latencyEnv) })

// latencyMax bounds the commands a session keeps stamps of.
const latencyMax = 1 << 17

// launchStamps are one launch command's times.
type launchStamps struct {
	recv, issue0, issue1, done time.Time
}

// latencyRec collects a session's stamps.
type latencyRec struct {
	mu     sync.Mutex
	stamps []launchStamps
}

func (l *latencyRec) add(st *launchStamps) {
	l.mu.Lock()
	if len(l.stamps) < latencyMax {
		l.stamps = append(l.stamps, *st)
	}
	l.mu.Unlock()
}

// write appends the session's summary to the file at path.
func (l *latencyRec) write(path, who string) {
	l.mu.Lock()
	stamps := l.stamps
	l.stamps = nil
	l.mu.Unlock()
	if path == "" || len(stamps) == 0 {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	stage := func(name string, d func(*launchStamps) time.Duration) {
		v := make([]time.Duration, 0, len(stamps))
		for i := range stamps {
			if !stamps[i].issue0.IsZero() && !stamps[i].done.IsZero() {
				v = append(v, d(&stamps[i]))
			}
		}
		if len(v) == 0 {
			return
		}
		slices.Sort(v)
		fmt.Fprintf(f, "  %-16s p50 %8.1f  p90 %8.1f  p99 %8.1f  max %8.1f us\n", name,
			us(v[len(v)/2]), us(v[len(v)*90/100]), us(v[len(v)*99/100]), us(v[len(v)-1]))
	}
	fmt.Fprintf(f, "session %s: %d launch commands\n", who, len(stamps))
	stage("recv->issue", func(s *launchStamps) time.Duration { return s.issue0.Sub(s.recv) })
	stage("issue (driver)", func(s *launchStamps) time.Duration { return s.issue1.Sub(s.issue0) })
	stage("issued->done", func(s *launchStamps) time.Duration { return s.done.Sub(s.issue1) })
	stage("recv->done", func(s *launchStamps) time.Duration { return s.done.Sub(s.recv) })
	slices.SortFunc(stamps, func(a, b launchStamps) int { return int(b.done.Sub(b.recv) - a.done.Sub(a.recv)) })
	for i := range min(len(stamps), 10) {
		s := &stamps[i]
		if s.issue0.IsZero() || s.done.IsZero() {
			continue
		}
		fmt.Fprintf(f, "  slow: recv->issue %.1f, issue %.1f, issued->done %.1f us (at %s)\n",
			us(s.issue0.Sub(s.recv)), us(s.issue1.Sub(s.issue0)), us(s.done.Sub(s.issue1)), s.recv.Format("15:04:05.000000"))
	}
}
