package guard_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/guard"
	"github.com/gpuos/gpuos/internal/interp"
)

// attackSpec is an attack kernel with what its header says.
type attackSpec struct {
	name, path, what string
	src              []byte
	kinds            uint32
	grid, block      uint32
	shared           uint32
}

func attackFiles(t testing.TB) []attackSpec {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "guard", "attacks", "*.ptx"))
	if err != nil || len(fs) == 0 {
		t.Fatalf("no attack kernels: %v", err)
	}
	sort.Strings(fs)
	var out []attackSpec
	for _, f := range fs {
		a := attackSpec{name: shortName(f), path: f, src: readPTX(t, f), grid: 1, block: 1}
		for _, line := range strings.Split(string(a.src), "\n") {
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "// "), ": ")
			if !ok || !strings.HasPrefix(line, "// ") {
				continue
			}
			switch k {
			case "attack":
				a.what = v
			case "expect":
				for _, kind := range strings.Split(v, "+") {
					switch strings.TrimSpace(kind) {
					case "access":
						a.kinds |= guard.KindAccess
					case "trap":
						a.kinds |= guard.KindTrap
					case "assert":
						a.kinds |= guard.KindAssert
					case "call":
						a.kinds |= guard.KindCall
					default:
						t.Fatalf("%s: unknown kind %q", f, kind)
					}
				}
			case "launch":
				for _, kv := range strings.Fields(v) {
					key, val, _ := strings.Cut(kv, "=")
					n, err := strconv.ParseUint(val, 10, 32)
					if err != nil {
						t.Fatalf("%s: launch %q", f, kv)
					}
					switch key {
					case "grid":
						a.grid = uint32(n)
					case "block":
						a.block = uint32(n)
					case "shared":
						a.shared = uint32(n)
					}
				}
			}
		}
		if a.what == "" || a.kinds == 0 {
			t.Fatalf("%s: header needs attack: and expect: lines", f)
		}
		out = append(out, a)
	}
	return out
}

// secret fills the victim's buffer: an attack that copies it out shows up in own.
func secret(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0xC0 + i%61)
	}
	return b
}

const (
	ownSize    = 4096
	victimOff  = 4096
	victimSize = 4096
)

// attackRun launches an attack kernel on the interpreter's two-window device.
func attackRun(t *testing.T, a attackSpec, guarded bool) (*device, *guard.Result, error) {
	t.Helper()
	m := parse(t, a.src)
	var res *guard.Result
	if guarded {
		m, res = guardText(t, a.src)
	}
	d := newDevice()
	p := d.load(t, m, res)
	k, err := p.Kernel("attack")
	if err != nil {
		t.Fatal(err)
	}
	own := d.alloc(ownSize)
	victim := uint64(victimBase + victimOff)
	copy(d.victim[victimOff:], secret(victimSize))
	binary.LittleEndian.PutUint64(d.bytesAt(own, 8), victim)
	params := make([]byte, 40)
	for i, v := range []uint64{own, ownSize, ownBase, ownBase + winSpan, victim} {
		binary.LittleEndian.PutUint64(params[8*i:], v)
	}
	_, err = k.Run(context.Background(), interp.Launch{Grid: [3]uint32{a.grid, 1, 1}, Block: [3]uint32{a.block, 1, 1},
		DynamicShared: a.shared, Params: params, Global: &d.mem, Workers: 1, MaxInstructions: 1 << 24})
	return d, res, err
}

// TestAttacksOnInterpreter runs each attack unguarded (it must really fault
// or reach the victim, or the corpus proves nothing) and guarded (it must be
// caught: no fault, the victim unchanged and unread, the violation recorded).
func TestAttacksOnInterpreter(t *testing.T) {
	for _, a := range attackFiles(t) {
		t.Run(a.name, func(t *testing.T) { checkCaught(t, a) })
	}
}

// checkCaught runs a unguarded (it must fault or reach the victim) and
// guarded (it must be caught).
func checkCaught(t *testing.T, a attackSpec) {
	t.Helper()
	d, _, err := attackRun(t, a, false)
	var f *interp.Fault
	harmful := errors.As(err, &f) || !bytes.Equal(d.victim[victimOff:victimOff+victimSize], secret(victimSize)) ||
		bytes.Contains(d.own[8:ownSize], secret(victimSize)[:4])
	if !harmful {
		t.Errorf("unguarded, the attack neither faults nor reaches the victim (err %v): it tests nothing", err)
	}

	d, res, err := attackRun(t, a, true)
	if err != nil {
		t.Fatalf("guarded attack faulted the device: %v", err)
	}
	if !bytes.Equal(d.victim[victimOff:victimOff+victimSize], secret(victimSize)) {
		t.Errorf("guarded attack changed the victim's data")
	}
	if bytes.Contains(d.own[8:ownSize], secret(victimSize)[:4]) {
		t.Errorf("guarded attack copied the victim's data into its own buffer")
	}
	r := d.record(t)
	if !r.Violated() || r.Count == 0 {
		t.Fatalf("no violation recorded: %+v", r)
	}
	if r.Kinds&a.kinds != a.kinds {
		t.Errorf("recorded kinds %s, want at least %s", r.KindString(), guard.Record{Kinds: a.kinds}.KindString())
	}
	if res.Function(r.Function) != "attack" {
		t.Errorf("recorded function %d (%q), want attack", r.Function, res.Function(r.Function))
	}
	t.Logf("%s: caught: %d violations, first %#x, kinds %s", a.what, r.Count, r.Addr, r.KindString())
}
