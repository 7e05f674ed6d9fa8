//go:build race

package interp

// raceEnabled makes plain global accesses take the address's atomic stripe, so
// that the race detector reports races in the interpreter, not the guest's.
const raceEnabled = true
