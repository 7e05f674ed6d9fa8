package audit

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzDecode: Decode never panics, fails only with ErrMalformed, and what it
// accepts survives an encode/decode round trip unchanged.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"time":"2025-11-22T07:00:00Z","kind":"launch","tenant":"a","session":3,"object":17}`))
	f.Add([]byte(`{"time":"2025-11-22T07:00:00.123456789-07:00","kind":"deny","code":"revoked","uid":0,"detail":{"a":[1,"x",null,{"b":true}]}}`))
	f.Add([]byte(`{"time":"2025-11-22T07:00:00Z","kind":"x","truncated":true}`))
	f.Add([]byte(`{"kind":"launch"}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := Decode(line)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode error %v is not ErrMalformed", err)
			}
			return
		}
		enc, err := encode(e, 0)
		if err != nil {
			t.Fatalf("encode of decoded event: %v", err)
		}
		e2, err := Decode(bytes.TrimSuffix(enc, []byte("\n")))
		if err != nil {
			t.Fatalf("decode of re-encoded %q: %v", enc, err)
		}
		enc2, err := encode(e2, 0)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the event:\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzReader: reading any log terminates without panicking and every error
// is ErrMalformed (the input is in memory, so no I/O error can occur).
func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"time\":\"2025-11-22T07:00:00Z\",\"kind\":\"a\"}\n\nxx\r\n{\"time\":\"2025-11-22T07:00:00Z\",\"kind\":\"b\"}"))
	f.Add([]byte("\n\n\n"))
	f.Fuzz(func(t *testing.T, log []byte) {
		r := NewReader(bytes.NewReader(log))
		for i := 0; ; i++ {
			if i > len(log)+1 {
				t.Fatal("reader does not terminate")
			}
			_, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("Next: %v", err)
			}
		}
	})
}
