package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// MaxReadLine is the longest line a Reader accepts; longer ones are skipped
// as malformed.
const MaxReadLine = 1 << 20

// A Reader reads events from an audit log, one line at a time.
type Reader struct {
	br   *bufio.Reader
	line int    // number of the last line read, from 1
	raw  []byte // the last line read, without its newline
}

// NewReader returns a Reader reading the log in r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next event. At the end of the log it returns io.EOF. A
// line that is not an event yields an error matching ErrMalformed that names
// the line; the Reader has moved past it and Next may be called again. Blank
// lines are skipped. Other errors come from the underlying reader.
func (r *Reader) Next() (Event, error) {
	for {
		raw, tooLong, err := r.readLine()
		if err != nil {
			return Event{}, err
		}
		r.line++
		r.raw = raw
		if tooLong {
			return Event{}, fmt.Errorf("audit line %d: longer than %d bytes: %w", r.line, MaxReadLine, ErrMalformed)
		}
		if len(strings.TrimSpace(string(raw))) == 0 {
			continue
		}
		e, err := Decode(raw)
		if err != nil {
			return Event{}, fmt.Errorf("audit line %d: %w", r.line, err)
		}
		return e, nil
	}
}

// Line returns the text of the line Next last read, without its newline.
// It is valid until the next call to Next.
func (r *Reader) Line() []byte { return r.raw }

// readLine returns one line without its newline, never holding more than
// MaxReadLine bytes of it: the rest of a longer line is read and discarded.
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		frag, err := r.br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > MaxReadLine+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, frag...)
			}
		}
		switch {
		case err == nil:
			return trimNewline(buf), tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && (len(buf) > 0 || tooLong):
			return buf, tooLong, nil // a last line without newline
		default:
			return nil, false, err
		}
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// Filter selects events. The zero Filter selects everything.
type Filter struct {
	Since  time.Time // events at or after Since (zero: from the start)
	Tenant string    // only this tenant's events ("" : all)
	// Kinds lists the kinds wanted; a kind ending in "." selects a family
	// ("policy."). Empty: all kinds.
	Kinds []string
	// Limit keeps at most this many events (0: no limit): the first ones
	// after Since, or with Tail the last ones.
	Limit int
	Tail  bool
}

// Match reports whether f selects e.
func (f Filter) Match(e Event) bool {
	if !f.Since.IsZero() && e.Time.Before(f.Since) {
		return false
	}
	if f.Tenant != "" && e.Tenant != f.Tenant {
		return false
	}
	if len(f.Kinds) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if string(e.Kind) == k || (strings.HasSuffix(k, ".") && strings.HasPrefix(string(e.Kind), k)) {
			return true
		}
	}
	return false
}

// Record is a selected event and its line as it appears in the log.
type Record struct {
	Event Event
	Line  string
}

// Query reads the whole log in r and returns the records f selects, oldest
// first, and how many malformed lines it skipped (a log cut short by a crash
// ends in one; those are counted, never fatal).
func Query(r io.Reader, f Filter) (recs []Record, malformed int, err error) {
	rd := NewReader(r)
	for {
		e, err := rd.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, ErrMalformed) {
			malformed++
			continue
		}
		if err != nil {
			return recs, malformed, fmt.Errorf("query audit log: %w", err)
		}
		if !f.Match(e) {
			continue
		}
		if f.Limit > 0 && !f.Tail && len(recs) == f.Limit {
			break
		}
		recs = append(recs, Record{Event: e, Line: string(rd.Line())})
		if f.Limit > 0 && f.Tail && len(recs) > 2*f.Limit {
			// Keep memory bounded by the limit, not the log.
			recs = append(recs[:0], recs[len(recs)-f.Limit:]...)
		}
	}
	if f.Limit > 0 && f.Tail && len(recs) > f.Limit {
		recs = recs[len(recs)-f.Limit:]
	}
	return recs, malformed, nil
}

// QueryFile is Query on the log file at path.
func QueryFile(path string, f Filter) ([]Record, int, error) {
	file, err := openRead(path)
	if err != nil {
		return nil, 0, err
	}
	defer file.Close()
	return Query(file, f)
}
