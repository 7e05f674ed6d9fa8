package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// syncBuffer is a bytes.Buffer safe for the writer goroutine and the test,
// recording how many Write calls it got.
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var t0 = time.Date(2025, 11, 22, 7, 0, 0, 0, time.UTC)

func TestLinesAreJSONOnePerWrite(t *testing.T) {
	var out syncBuffer
	l := New(&out, Options{})
	events := []Event{
		{Time: t0, Kind: KindSessionOpen, Tenant: "alice", Session: 7, PID: 1234, UID: UID(0), Detail: map[string]any{"label": "train \"run\"\n2"}},
		Event{Time: t0.Add(time.Second), Kind: KindDeny, Tenant: "bob", Session: 9, Object: 0xabc}.WithError(v1.Errorf(v1.CodePermissionDenied, "no launch right")),
		{Kind: KindDriverStart, Detail: map[string]any{"backend": "sim"}},
	}
	for _, e := range events {
		l.Log(e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(events) || out.writes != len(events) {
		t.Fatalf("%d lines in %d writes; want %d of each:\n%s", len(lines), out.writes, len(events), out.String())
	}
	for i, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Errorf("line %d is not JSON: %s", i, line)
		}
		got, err := Decode([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if got.Kind != events[i].Kind || got.Tenant != events[i].Tenant || got.Session != events[i].Session {
			t.Errorf("line %d decoded to %+v; want %+v", i, got, events[i])
		}
	}
	if !strings.Contains(lines[0], `"uid":0`) {
		t.Errorf("uid 0 (root) must be written: %s", lines[0])
	}
	if strings.Contains(lines[2], `"uid"`) || strings.Contains(lines[2], `"pid"`) {
		t.Errorf("absent uid/pid must be left out: %s", lines[2])
	}
	if !strings.Contains(lines[1], `"code":"permission denied"`) {
		t.Errorf("denial must carry its code: %s", lines[1])
	}
	if got, _ := Decode([]byte(lines[2])); got.Time.IsZero() {
		t.Error("a zero Time must be stamped by Log")
	}
}

func TestConcurrentLoggersShareAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	const loggers, goroutines, each = 3, 4, 300
	var wg sync.WaitGroup
	var ls []*Logger
	for li := range loggers {
		l, err := Open(path, Options{Queue: goroutines * each})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					l.Log(Event{Kind: KindLaunch, Tenant: fmt.Sprintf("t%d", li), Session: uint64(g), Object: uint64(i),
						Detail: map[string]any{"pad": strings.Repeat("x", 100+i%700)}})
				}
			}()
		}
	}
	wg.Wait()
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if l.Dropped() != 0 {
			t.Fatalf("dropped %d with a queue that fits everything", l.Dropped())
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, malformed, err := Query(bytes.NewReader(data), Filter{})
	if err != nil || malformed != 0 {
		t.Fatalf("Query: %d malformed, %v", malformed, err)
	}
	if len(recs) != loggers*goroutines*each {
		t.Fatalf("read %d events; want %d", len(recs), loggers*goroutines*each)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		key := fmt.Sprintf("%s/%d/%d", r.Event.Tenant, r.Event.Session, r.Event.Object)
		if seen[key] {
			t.Fatalf("event %s twice", key)
		}
		seen[key] = true
	}
}

// blockingWriter holds every Write until released.
type blockingWriter struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
	out     syncBuffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	<-w.release
	return w.out.Write(p)
}

func TestDropsAreCountedAndSummarised(t *testing.T) {
	w := &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
	l := New(w, Options{Queue: 4})
	l.Log(Event{Kind: KindLaunch, Object: 0}) // taken by the writer, which then blocks
	<-w.started
	const total = 20
	for i := 1; i < total; i++ {
		l.Log(Event{Kind: KindLaunch, Object: uint64(i)}) // never blocks
	}
	dropped := l.Dropped()
	if dropped != total-1-4 {
		t.Errorf("dropped %d; want %d (queue of 4 behind a blocked writer)", dropped, total-1-4)
	}
	close(w.release)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	launches, summarised := launchesAndDrops(t, w.out.String())
	if launches+int(summarised) != total || uint64(summarised) != dropped {
		t.Errorf("%d written + %v summarised as dropped; want %d in all, %d dropped", launches, summarised, total, dropped)
	}
}

func TestLogAfterCloseIsCounted(t *testing.T) {
	l := New(io.Discard, Options{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Log(Event{Kind: KindLaunch})
	if l.Dropped() != 1 {
		t.Errorf("Dropped = %d; want 1", l.Dropped())
	}
	if err := l.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v", err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrorIsReported(t *testing.T) {
	l := New(failWriter{}, Options{})
	l.Log(Event{Kind: KindAlloc})
	if err := l.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Flush = %v; want the write error", err)
	}
	if err := l.Close(); err == nil {
		t.Error("Close must report the write error")
	}
}

func TestLongLinesLoseDetail(t *testing.T) {
	var out syncBuffer
	l := New(&out, Options{MaxLine: 256})
	l.Log(Event{Time: t0, Kind: KindLoad, Tenant: "a", Detail: map[string]any{"name": strings.Repeat("k", 1000)}})
	l.Log(Event{Time: t0, Kind: KindLoad, Tenant: "a", Detail: map[string]any{"bad": func() {}}})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	recs, _, err := Query(strings.NewReader(out.String()), Filter{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("got %d records, %v", len(recs), err)
	}
	for _, r := range recs {
		if !r.Event.Truncated || r.Event.Detail != nil || len(r.Line) > 256 {
			t.Errorf("record %q: want truncated, no detail, short", r.Line)
		}
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
	}{
		{`{"time":"2025-11-22T07:00:00Z","kind":"launch"}`, true},
		{`{"time":"2025-11-22T07:00:00+02:00","kind":"launch","future_field":[1,2]}`, true},
		{`  {"time":"2025-11-22T07:00:00Z","kind":"x","detail":{"a":1}}  `, true},
		{``, false},
		{`null`, false},
		{`[]`, false},
		{`{"kind":"launch"}`, false},
		{`{"time":"2025-11-22T07:00:00Z"}`, false},
		{`{"time":"yesterday","kind":"launch"}`, false},
		{`{"time":"2025-11-22T07:00:00Z","kind":"launch"} {}`, false},
		{`{"time":"2025-11-22T07:00:00Z","kind":"launch"`, false},
		{`{"time":"2025-11-22T07:00:00Z","kind":"launch","session":-1}`, false},
		{`{"time":"2025-11-22T07:00:00Z","kind":7}`, false},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.line))
		if tt.ok && err != nil {
			t.Errorf("Decode(%s): %v", tt.line, err)
		}
		if !tt.ok && !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%s) = %v; want ErrMalformed", tt.line, err)
		}
	}
}

func TestReaderSkipsBadLines(t *testing.T) {
	good := `{"time":"2025-11-22T07:00:00Z","kind":"alloc"}`
	log := good + "\r\n" +
		"\n" +
		"garbage\n" +
		`{"time":"2025-11-22T07:00:00Z","kind":"free"` + strings.Repeat(" ", MaxReadLine) + "}\n" +
		good + "\n" +
		`{"time":"2025-11-22T07:00:01Z","kind":"fr` // cut short by a crash
	r := NewReader(strings.NewReader(log))
	var kinds []string
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatal(err)
			}
			kinds = append(kinds, "bad")
			continue
		}
		kinds = append(kinds, string(e.Kind))
	}
	if got, want := strings.Join(kinds, ","), "alloc,bad,bad,alloc,bad"; got != want {
		t.Errorf("read %s; want %s", got, want)
	}
}

func TestFilter(t *testing.T) {
	events := []Event{
		{Time: t0, Kind: KindSessionOpen, Tenant: "a"},
		{Time: t0.Add(1 * time.Second), Kind: KindLaunch, Tenant: "a"},
		{Time: t0.Add(2 * time.Second), Kind: KindPolicyLoad, Tenant: ""},
		{Time: t0.Add(3 * time.Second), Kind: KindLaunch, Tenant: "b"},
		{Time: t0.Add(4 * time.Second), Kind: KindPolicyEject},
		{Time: t0.Add(5 * time.Second), Kind: KindSessionClose, Tenant: "a"},
	}
	var buf bytes.Buffer
	for _, e := range events {
		line, err := encode(e, 0)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
	}
	tests := []struct {
		name string
		f    Filter
		want string // kinds/tenant of selected events
	}{
		{"all", Filter{}, "session.open/a launch/a policy.load/ launch/b policy.eject/ session.close/a"},
		{"since", Filter{Since: t0.Add(3 * time.Second)}, "launch/b policy.eject/ session.close/a"},
		{"tenant", Filter{Tenant: "a"}, "session.open/a launch/a session.close/a"},
		{"kind", Filter{Kinds: []string{"launch"}}, "launch/a launch/b"},
		{"family", Filter{Kinds: []string{"policy.", "session.close"}}, "policy.load/ policy.eject/ session.close/a"},
		{"prefix needs a dot", Filter{Kinds: []string{"policy"}}, ""},
		{"limit", Filter{Limit: 2}, "session.open/a launch/a"},
		{"tail", Filter{Limit: 2, Tail: true}, "policy.eject/ session.close/a"},
		{"everything combined", Filter{Since: t0.Add(time.Second), Tenant: "a", Kinds: []string{"launch", "session."}, Limit: 1, Tail: true}, "session.close/a"},
	}
	for _, tt := range tests {
		recs, malformed, err := Query(bytes.NewReader(buf.Bytes()), tt.f)
		if err != nil || malformed != 0 {
			t.Fatalf("%s: %d malformed, %v", tt.name, malformed, err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, string(r.Event.Kind)+"/"+r.Event.Tenant)
			if d, err := Decode([]byte(r.Line)); err != nil || d.Kind != r.Event.Kind {
				t.Errorf("%s: Line %q does not hold its event", tt.name, r.Line)
			}
		}
		if s := strings.Join(got, " "); s != tt.want {
			t.Errorf("%s: got %q; want %q", tt.name, s, tt.want)
		}
	}
}

func TestTailKeepsLastManyOfALongLog(t *testing.T) {
	var buf bytes.Buffer
	for i := range 1000 {
		line, _ := encode(Event{Time: t0.Add(time.Duration(i)), Kind: KindCopy, Object: uint64(i)}, 0)
		buf.Write(line)
	}
	recs, _, err := Query(&buf, Filter{Limit: 3, Tail: true})
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for i, r := range recs {
		if r.Event.Object != uint64(997+i) {
			t.Errorf("record %d is object %d; want %d", i, r.Event.Object, 997+i)
		}
	}
}

func TestQueryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Log(Event{Kind: KindRevoke, Tenant: "x"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	recs, _, err := QueryFile(path, Filter{Tenant: "x"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("QueryFile: %d records, %v", len(recs), err)
	}
	if _, _, err := QueryFile(filepath.Join(t.TempDir(), "missing"), Filter{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "no", "dir"), Options{}); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}

func ExampleLogger() {
	var out bytes.Buffer
	l := New(&out, Options{})
	l.Log(Event{
		Time:    time.Date(2025, 11, 22, 7, 0, 0, 0, time.UTC),
		Kind:    KindDeny,
		Tenant:  "alice",
		Session: 7,
		PID:     4242,
		UID:     UID(1000),
	}.WithError(v1.Errorf(v1.CodePermissionDenied, "session lacks launch")))
	_ = l.Close()
	fmt.Print(out.String())
	// Output:
	// {"time":"2025-11-22T07:00:00Z","kind":"deny","tenant":"alice","session":7,"pid":4242,"uid":1000,"code":"permission denied","error":"permission denied: session lacks launch"}
}

// A deferred event waits for the writer's next event, a Flush, a Close or
// DeferFor, whichever comes first, and is then written whole.
func TestDefer(t *testing.T) {
	t.Run("written with the next logged event", func(t *testing.T) {
		var out syncBuffer
		l := New(&out, Options{DeferFor: time.Hour})
		l.Defer(Event{Kind: KindLaunch, Object: 1})
		l.Log(Event{Kind: KindDeny, Object: 2})
		waitWritten(t, l, 2)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		recs, malformed, err := Query(strings.NewReader(out.String()), Filter{})
		if err != nil || malformed != 0 || len(recs) != 2 {
			t.Fatalf("%d records, %d malformed, %v; want 2", len(recs), malformed, err)
		}
		if recs[0].Event.Object != 1 || recs[1].Event.Object != 2 {
			t.Errorf("written %d then %d; want the deferred 1 before 2", recs[0].Event.Object, recs[1].Event.Object)
		}
	})
	t.Run("not before DeferFor, then without help", func(t *testing.T) {
		var out syncBuffer
		l := New(&out, Options{DeferFor: 50 * time.Millisecond})
		start := time.Now()
		l.Defer(Event{Kind: KindLaunch})
		l.Defer(Event{Kind: KindCopy})
		waitWritten(t, l, 2)
		if waited := time.Since(start); waited < 50*time.Millisecond {
			t.Errorf("written after %v; want DeferFor (50ms) or more", waited)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("flush and close write them", func(t *testing.T) {
		var out syncBuffer
		l := New(&out, Options{DeferFor: time.Hour})
		l.Defer(Event{Kind: KindLaunch})
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if l.Written() != 1 {
			t.Errorf("after Flush %d written; want 1", l.Written())
		}
		l.Defer(Event{Kind: KindCopy})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if l.Written() != 2 || !strings.Contains(out.String(), `"kind":"copy"`) {
			t.Errorf("after Close %d written; want 2:\n%s", l.Written(), out.String())
		}
		l.Defer(Event{Kind: KindLaunch})
		if l.Dropped() != 1 {
			t.Errorf("Defer after Close: Dropped = %d; want 1", l.Dropped())
		}
	})
	t.Run("bounded by the queue's size", func(t *testing.T) {
		var out syncBuffer
		l := New(&out, Options{Queue: 4, DeferFor: time.Hour})
		for range 10 {
			l.Defer(Event{Kind: KindLaunch})
		}
		if l.Dropped() != 6 {
			t.Errorf("Dropped = %d; want 6 (4 wait)", l.Dropped())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		launches, summarised := launchesAndDrops(t, out.String())
		if launches != 4 || summarised != 6 {
			t.Errorf("%d launches written, %v summarised as dropped; want 4 and 6", launches, summarised)
		}
	})
}

// waitWritten waits until l has written n lines, failing after 10 s.
func waitWritten(t *testing.T, l *Logger, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); l.Written() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d lines written after 10 s; want %d", l.Written(), n)
		}
	}
}

// launchesAndDrops reads a log back: its launch records, and the events its
// audit.dropped records say were dropped.
func launchesAndDrops(t *testing.T, log string) (launches int, dropped float64) {
	t.Helper()
	recs, malformed, err := Query(strings.NewReader(log), Filter{})
	if err != nil || malformed != 0 {
		t.Fatal(malformed, err)
	}
	for _, r := range recs {
		switch r.Event.Kind {
		case KindLaunch:
			launches++
		case KindDropped:
			dropped += r.Event.Detail["dropped"].(float64)
		}
	}
	return launches, dropped
}
