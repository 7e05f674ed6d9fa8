package main

import (
	"testing"
	"time"
)

// TestPhaseAt: an interleaved run's window alternates alone and loaded
// phases from o.from; the first settle of an alone phase counts in neither.
func TestPhaseAt(t *testing.T) {
	from := time.Unix(1000, 0)
	o := options{from: from, phase: 500 * time.Millisecond, settle: 25 * time.Millisecond}
	for _, tt := range []struct {
		at                  time.Duration
		wantLoaded, counted bool
	}{
		{0, false, false},                       // an alone phase's start: the load may still drain
		{24 * time.Millisecond, false, false},   // still settling
		{25 * time.Millisecond, false, true},    // alone from here
		{499 * time.Millisecond, false, true},   // the first alone phase's end
		{500 * time.Millisecond, true, true},    // the first loaded phase, from its first instant
		{999 * time.Millisecond, true, true},    //
		{1000 * time.Millisecond, false, false}, // alone again, settling
		{1030 * time.Millisecond, false, true},  //
		{1700 * time.Millisecond, true, true},   // the second loaded phase
	} {
		loaded, counted := o.phaseAt(from.Add(tt.at))
		if loaded != tt.wantLoaded || counted != tt.counted {
			t.Errorf("phaseAt(from+%v) = loaded %v, counted %v; want %v, %v", tt.at, loaded, counted, tt.wantLoaded, tt.counted)
		}
	}
	// Without phases, every request is the scenario's own.
	if loaded, counted := (options{from: from}).phaseAt(from.Add(time.Second)); !loaded || !counted {
		t.Errorf("phaseAt without phases = %v, %v; want true, true", loaded, counted)
	}
}
