package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Kind names what happened. Kinds are dotted lower-case words; a filter may
// select a family by prefix ("policy.").
type Kind string

// Kinds of events.
const (
	KindSessionOpen  Kind = "session.open"
	KindSessionClose Kind = "session.close"
	KindLoad         Kind = "load"      // a program was loaded
	KindLaunch       Kind = "launch"    // a kernel was launched
	KindCopy         Kind = "copy"      // memcpy or memset
	KindAlloc        Kind = "alloc"     // a buffer was created
	KindFree         Kind = "free"      // a buffer was released
	KindGrant        Kind = "grant"     // a buffer was offered to other sessions
	KindAttach       Kind = "attach"    // a grant was mapped into a session
	KindRevoke       Kind = "revoke"    // a capability was revoked
	KindDeny         Kind = "deny"      // a request was refused (Code says why)
	KindViolation    Kind = "violation" // a guarded kernel tried to leave its window
	KindKill         Kind = "session.kill"
	KindDriverStart  Kind = "driver.start"
	KindDriverExit   Kind = "driver.exit"
	KindPolicyLoad   Kind = "policy.load"
	KindPolicyUse    Kind = "policy.use"
	KindPolicyUnload Kind = "policy.unload"
	KindPolicyEject  Kind = "policy.eject" // a policy trapped or overran and was replaced
	KindDropped      Kind = "audit.dropped"
)

// Event is one audit record. Zero-valued optional fields are left out of the
// line.
type Event struct {
	Time    time.Time      `json:"time"`
	Kind    Kind           `json:"kind"`
	Tenant  string         `json:"tenant,omitempty"`
	Session uint64         `json:"session,omitempty"`
	PID     int32          `json:"pid,omitempty"`
	UID     *uint32        `json:"uid,omitempty"` // nil when no process is involved (uid 0 is root)
	Object  uint64         `json:"object,omitempty"`
	Code    string         `json:"code,omitempty"`  // v1 error code name, on denials and failures
	Error   string         `json:"error,omitempty"` // the error's text
	Detail  map[string]any `json:"detail,omitempty"`
	// Truncated is set when the line would have been too long and Detail
	// was dropped from it.
	Truncated bool `json:"truncated,omitempty"`
}

// UID returns a pointer to uid, for Event.UID.
func UID(uid uint32) *uint32 { return &uid }

// WithError returns e with Code and Error describing err.
func (e Event) WithError(err error) Event {
	if err != nil {
		e.Code = v1.CodeOf(err).String()
		e.Error = err.Error()
	}
	return e
}

// Errors returned by audit.
var (
	// ErrMalformed: a log line that is not an audit event.
	ErrMalformed = v1.Errorf(v1.CodeMalformed, "bad audit line")
	// ErrClosed: the logger was closed.
	ErrClosed = v1.Errorf(v1.CodeInvalidArgument, "audit logger closed")
)

// Decode parses one log line (without its newline). The line must be one
// JSON object with a non-zero time and a non-empty kind; unknown fields are ignored
// so that older readers accept newer logs.
func Decode(line []byte) (Event, error) {
	var e Event
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Event{}, fmt.Errorf("decode audit line: not a JSON object: %w", ErrMalformed)
	}
	if err := json.Unmarshal(trimmed, &e); err != nil {
		return Event{}, fmt.Errorf("decode audit line: %v: %w", err, ErrMalformed)
	}
	if e.Time.IsZero() {
		return Event{}, fmt.Errorf("decode audit line: no time: %w", ErrMalformed)
	}
	if e.Kind == "" {
		return Event{}, fmt.Errorf("decode audit line: no kind: %w", ErrMalformed)
	}
	return e, nil
}

// encode returns e's line, newline included, no longer than maxLine unless
// even without Detail it is longer (then it is returned anyway: an audit
// record is never silently lost for being big).
func encode(e Event, maxLine int) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil || (maxLine > 0 && len(b)+1 > maxLine && e.Detail != nil) {
		// Detail holds values that do not encode, or too many of them.
		e.Detail = nil
		e.Truncated = true
		b, err = json.Marshal(e)
		if err != nil {
			return nil, err
		}
	}
	return append(b, '\n'), nil
}
