package driver

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sync"
	"time"
)

// Launch latency stages, a diagnostic: with $GPUOS_LATENCY_LOG set, each
// session times every launch command it serves — received (the request
// handled), issued (the backend's launch called and returned), synced (the
// scheduler's completion waiter saw its event), done (its completion
// reported) — and when it ends appends their percentiles and its slowest
// commands' stages to that file, and every command's times (Unix ns) to the
// file's name plus ".csv" (and every stream synchronize's, see syncStamps,
// plus ".sync.csv"). It tells where a latency-critical tenant's tail
// comes from: the scheduler (received to issue), the driver call, the GPU
// and the waiter (issued to synced), or the scheduler's completion (synced
// to done); what is not in it happened in the client or between the
// processes.
const latencyEnv = "GPUOS_LATENCY_LOG"

var latencyLog = sync.OnceValue(func() string {
	path := os.Getenv(latencyEnv)
	if path != "" {
		// Contended mutexes, with the stacks that held them: written beside
		// the log (.mutex.txt) as each session ends.
		runtime.SetMutexProfileFraction(latencyMutexFraction)
	}
	return path
})

// latencyMutexFraction samples one mutex contention in this many.
const latencyMutexFraction = 5

// latencyMax bounds the commands a session keeps stamps of.
const latencyMax = 1 << 17

// launchStamps are one launch command's times.
type launchStamps struct {
	recv, issue0, issue1, synced, done time.Time
	submit                             time.Time // handed to the scheduler (after recv, before issue0)
	locked                             time.Time // the scheduler's lock taken for it (after submit)
	beside                             int       // other goroutines issuing commands as its issue began (sched.InDriver; -1: not counted)
	served                             time.Time // the handler returned (the serving goroutine free again)
	fenced                             time.Time // the fence behind the launch enqueued (zero: none)
	expressed                          bool      // the scheduler's express lane issued it
	byHelper                           bool      // the hedge's helper served it (wire.Request.Hedged)
}

// syncStamps are one stream synchronize's times: received, its commands
// all issued (settle's WaitIssued returned), and the streams synchronized
// (the reply follows); and how it waited for them (waitedSync, ...).
type syncStamps struct {
	recv, issued, synced time.Time
	how                  int
}

// latencyRec collects a session's stamps.
type latencyRec struct {
	service  bool      // the session is of the high class: its stalls are traced
	lastRecv time.Time // the serving goroutine's previous launch
	mu       sync.Mutex
	stamps   chunked[launchStamps]
	syncs    chunked[syncStamps]
	// served maps a launch's recv (Unix ns) to when its handler returned:
	// kept apart from stamps, which the command's Done, on another
	// goroutine, may take before the handler has returned.
	served map[int64]int64
}

// received notes a launch received at recv (on the serving goroutine). A
// service submits at a fixed period and waits for each kernel: a gap of
// several periods between two launches that are not an idle pause means the
// client or this daemon stalled in between.
func (l *latencyRec) received(recv time.Time) {
	if l.service && !l.lastRecv.IsZero() {
		if gap := recv.Sub(l.lastRecv); gap > stallGap && gap < stallIdle {
			stallTraces.note("launch gap", gap, recv)
		}
	}
	l.lastRecv = recv
}

// issued notes a launch issued; a service's launch that waited long for it
// is a stall.
func (l *latencyRec) issued(st *launchStamps) {
	if d := st.issue0.Sub(st.recv); l.service && d > stallIssue {
		stallTraces.note("recv->issue", d, st.recv)
	}
}

// chunked is an append-only list in chunks: appending never copies what is
// there, so the latency log's lock, which the service's goroutines take to
// stamp, is held briefly whatever the length (run 44's mutex profile
// showed contended waits on it averaging 79 µs while a slice grew by
// copying; what made them long was not measured).
type chunked[T any] struct {
	chunks [][]T
	n      int
}

const latencyChunk = 4096

func (c *chunked[T]) add(v T) {
	if c.n >= latencyMax {
		return
	}
	if k := len(c.chunks); k == 0 || len(c.chunks[k-1]) == latencyChunk {
		c.chunks = append(c.chunks, make([]T, 0, latencyChunk))
	}
	last := &c.chunks[len(c.chunks)-1]
	*last = append(*last, v)
	c.n++
}

// all returns the list in one slice.
func (c *chunked[T]) all() []T {
	out := make([]T, 0, c.n)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	return out
}

func (l *latencyRec) addSync(st syncStamps) {
	l.mu.Lock()
	l.syncs.add(st)
	l.mu.Unlock()
}

// servedAt notes that the handler of the launch received at recv returned
// at t.
func (l *latencyRec) servedAt(recv, t time.Time) {
	l.mu.Lock()
	if l.served == nil {
		l.served = make(map[int64]int64)
	}
	if len(l.served) < latencyMax {
		l.served[recv.UnixNano()] = t.UnixNano()
	}
	l.mu.Unlock()
}

func (l *latencyRec) add(st *launchStamps) {
	l.mu.Lock()
	l.stamps.add(*st)
	l.mu.Unlock()
}

// write appends the session's summary to the file at path.
func (l *latencyRec) write(path, who string) {
	l.mu.Lock()
	stamps, syncs, served := l.stamps.all(), l.syncs.all(), l.served
	l.stamps, l.syncs, l.served = chunked[launchStamps]{}, chunked[syncStamps]{}, nil
	l.mu.Unlock()
	for i := range stamps {
		if t, ok := served[stamps[i].recv.UnixNano()]; ok {
			stamps[i].served = time.Unix(0, t)
		}
	}
	if path == "" || len(stamps) == 0 {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	writeLatencyCSV(path+".csv", who, stamps)
	writeSyncCSV(path+".sync.csv", who, syncs)
	if mf, err := os.Create(path + ".mutex.txt"); err == nil {
		pprof.Lookup("mutex").WriteTo(mf, 1)
		mf.Close()
	}
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
	expressed := 0
	for i := range stamps {
		if stamps[i].expressed {
			expressed++
		}
	}
	fmt.Fprintf(f, "session %s: %d launch commands, %d by the express lane\n", who, len(stamps), expressed)
	var hows [waitedClient + 1]int
	for _, st := range syncs {
		if st.how >= 0 && st.how < len(hows) {
			hows[st.how]++
		}
	}
	fmt.Fprintf(f, "  synchronizes: %d by the driver, %d polling fences (%d of them enqueued before it came), %d polling then by the driver, %d by the client\n",
		hows[waitedSync], hows[waitedFence]+hows[waitedFenceEarly], hows[waitedFenceEarly], hows[waitedFenceLong], hows[waitedClient])
	fmt.Fprintf(f, "  process so far: %s\n", runtimeTails())
	stage("recv->issue", func(s *launchStamps) time.Duration { return s.issue0.Sub(s.recv) })
	stage("issue (driver)", func(s *launchStamps) time.Duration { return s.issue1.Sub(s.issue0) })
	stage("issued->done", func(s *launchStamps) time.Duration { return s.done.Sub(s.issue1) })
	stage("synced->done", func(s *launchStamps) time.Duration {
		if s.synced.IsZero() {
			return 0
		}
		return s.done.Sub(s.synced)
	})
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

// writeLatencyCSV appends one row per command: the session, then its stages'
// times in Unix ns (0: not reached), then whether the express lane issued it,
// then when it was handed to the scheduler, when its handler returned, when
// the fence behind it was enqueued, whether the hedge's helper served it (1),
// when the scheduler's lock was taken for it, and how many other goroutines
// were issuing commands as its issue began (-1: the scheduler did not count).
func writeLatencyCSV(path, who string, stamps []launchStamps) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	ns := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixNano()
	}
	// One write per session, so that sessions ending together do not
	// interleave rows.
	var b []byte
	for i := range stamps {
		s := &stamps[i]
		helper := 0
		if s.byHelper {
			helper = 1
		}
		b = fmt.Appendf(b, "%q,%d,%d,%d,%d,%d,%t,%d,%d,%d,%d,%d,%d\n", who, ns(s.recv), ns(s.issue0), ns(s.issue1), ns(s.synced), ns(s.done), s.expressed, ns(s.submit), ns(s.served), ns(s.fenced), helper, ns(s.locked), s.beside)
	}
	f.Write(b)
}

// writeSyncCSV appends one row per stream synchronize: the session, then
// its times in Unix ns (received, issued, synced), then how it waited for
// the streams: 0 stream synchronize, 1 fences, 2 fences then synchronize,
// 3 fences all enqueued before it came (prefence).
func writeSyncCSV(path, who string, syncs []syncStamps) {
	if len(syncs) == 0 {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	var b []byte
	for _, s := range syncs {
		b = fmt.Appendf(b, "%q,%d,%d,%d,%d\n", who, s.recv.UnixNano(), s.issued.UnixNano(), s.synced.UnixNano(), s.how)
	}
	f.Write(b)
}

// runtimeTails summarizes the Go runtime's own delays in this process so
// far: goroutines runnable but not running (scheduling latency), and
// stop-the-world pauses, each as how many reached 100 µs and 1 ms and the
// largest bucket reached; and the total time goroutines waited on mutexes.
func runtimeTails() string {
	ms := []metrics.Sample{{Name: "/sched/latencies:seconds"}, {Name: "/sched/pauses/total/gc:seconds"}, {Name: "/sync/mutex/wait/total:seconds"}}
	metrics.Read(ms)
	tail := func(s metrics.Sample) string {
		if s.Value.Kind() != metrics.KindFloat64Histogram {
			return "n/a"
		}
		h := s.Value.Float64Histogram()
		var over100us, over1ms uint64
		top := 0.0
		for i, c := range h.Counts {
			if c == 0 {
				continue
			}
			lo := h.Buckets[i]
			if lo >= 100e-6 {
				over100us += c
			}
			if lo >= 1e-3 {
				over1ms += c
			}
			if !math.IsInf(lo, 0) {
				top = max(top, lo)
			}
		}
		return fmt.Sprintf(">=100us %d, >=1ms %d, max bucket from %.0f us", over100us, over1ms, top*1e6)
	}
	mutex := "n/a"
	if ms[2].Value.Kind() == metrics.KindFloat64 {
		mutex = fmt.Sprintf("%.1f ms", ms[2].Value.Float64()*1e3)
	}
	return "sched latency " + tail(ms[0]) + "; GC pauses " + tail(ms[1]) + "; mutex wait " + mutex
}

// Stall traces, a diagnostic: with $GPUOS_STALL_TRACE naming a directory and
// the latency log on, the process keeps a flight recording of its Go
// execution trace (runtime/trace), and when a service's launch stalls — a
// gap of more than stallGap between two of its launches, or more than
// stallIssue from receipt to issue — it writes the last seconds of it there
// (stall-PID-N.trace, at most stallTraceMax per process), with a log event
// ("gpuos.stall") naming the stall and its wall-clock time. "go tool trace
// -d=parsed" prints it, wall-clock times included (its Sync events).
const (
	stallTraceEnv = "GPUOS_STALL_TRACE"
	stallGap      = 2500 * time.Microsecond
	stallIdle     = 50 * time.Millisecond
	stallIssue    = time.Millisecond
	stallTraceMax = 4
)

var stallTraces = &stallTracer{}

type stallTracer struct {
	once    sync.Once
	fr      *trace.FlightRecorder
	dir     string
	mu      sync.Mutex
	written int
	last    time.Time
	writing sync.WaitGroup // recordings being written
}

func (t *stallTracer) start() {
	t.once.Do(func() {
		t.dir = os.Getenv(stallTraceEnv)
		if t.dir == "" {
			return
		}
		fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 3 * time.Second, MaxBytes: 256 << 20})
		if fr.Start() == nil {
			t.fr = fr
		}
	})
}

// note records a stall of length d seen at at (start has run: the session
// is a service's, with the latency log on) and, unless one was written
// in the last two seconds or enough were, writes the recording 100 ms later
// (so that it holds what followed too).
func (t *stallTracer) note(what string, d time.Duration, at time.Time) {
	if t.fr == nil {
		return
	}
	trace.Log(context.Background(), "gpuos.stall", fmt.Sprintf("%s %v at %d", what, d, at.UnixNano()))
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.written >= stallTraceMax || time.Since(t.last) < 2*time.Second {
		return
	}
	t.written++
	t.last = time.Now()
	path := filepath.Join(t.dir, fmt.Sprintf("stall-%d-%d.trace", os.Getpid(), t.written))
	t.writing.Add(1)
	time.AfterFunc(100*time.Millisecond, func() {
		defer t.writing.Done()
		f, err := os.Create(path)
		if err != nil {
			return
		}
		t.fr.WriteTo(f)
		f.Close()
	})
}
