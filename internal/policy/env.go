package policy

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// Env is what the host functions of a hook in progress read: the tenants,
// their shares and queues. The scheduler's adapter implements it over
// sched.Host; tests implement it directly. Tenant ids are small integers
// 0..NumTenants()-1; an unknown id or engine reads as zero. (The typed maps
// are not the Env's: they live in Maps.)
type Env interface {
	Now() time.Duration
	NumTenants() int
	TenantName(t uint32) string
	Class(t uint32) int
	Weight(t, engine uint32) int64
	MemoryShare(t uint32) uint64
	Sessions(t uint32) int
	Queued(t, engine uint32) int
	InFlight(t, engine uint32) int
	Usage(t, engine uint32) int64
	InFlightCost(t, engine uint32) int64
	HeadCost(t, engine uint32) int64
	HeadSeq(t, engine uint32) uint64
	EngineInFlight(engine uint32) int
	SliceTarget() time.Duration
	HighClassReserved() bool
}

// validMapName reports whether a guest-chosen map name is acceptable: 1 to 64
// bytes of lower-case letters, digits, '.', '_' and '-'.
func validMapName(s string) bool {
	if len(s) == 0 || len(s) > maxMapNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// guestLog keeps the last lines a guest wrote (fd 1 and 2, and the log host
// function), so that an ejection can say what the guest said last (a Go
// guest's panic message, for one). It is bounded: lines are cut at
// maxLogLine bytes and only the last logLines are kept.
type guestLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	next    int
	total   int
	sink    func(line string) // nil: keep only
}

const logLines = 32

func (l *guestLog) write(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLogLine - len(l.partial)
			l.partial = append(l.partial, p[:min(len(p), max(room, 0))]...)
			return
		}
		room := maxLogLine - len(l.partial)
		l.partial = append(l.partial, p[:min(i, max(room, 0))]...)
		l.addLocked(string(l.partial))
		l.partial = l.partial[:0]
		p = p[i+1:]
	}
}

func (l *guestLog) line(s string) {
	if len(s) > maxLogLine {
		s = s[:maxLogLine]
	}
	l.mu.Lock()
	l.addLocked(strings.TrimRight(s, "\n"))
	l.mu.Unlock()
}

func (l *guestLog) addLocked(s string) {
	if len(l.lines) < logLines {
		l.lines = append(l.lines, s)
	} else {
		l.lines[l.next] = s
		l.next = (l.next + 1) % logLines
	}
	l.total++
	if l.sink != nil {
		l.sink(s)
	}
}

// Lines returns the kept lines, oldest first, and any unterminated text.
func (l *guestLog) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append(append([]string(nil), l.lines[l.next:]...), l.lines[:l.next]...)
	if len(l.partial) > 0 {
		out = append(out, string(l.partial))
	}
	return out
}

// cause returns the most telling line of what the guest said before dying:
// a Go panic or fatal error if there is one, else the last line.
func (l *guestLog) cause() string {
	lines := l.Lines()
	for _, s := range lines {
		if strings.HasPrefix(s, "panic: ") || strings.HasPrefix(s, "fatal error: ") {
			return s
		}
	}
	if len(lines) > 0 {
		return lines[len(lines)-1]
	}
	return ""
}
