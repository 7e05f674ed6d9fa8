package policy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Errors returned by this package. The ejection errors (ErrDeadline,
// ErrMemoryLimit, ErrTrap, ErrInvalidDecision, ErrABI) come back from a hook
// of an Instance that has been stopped for good.
var (
	// ErrInvalidModule: the bytes are not a valid WebAssembly module, or use
	// features the host does not enable (SIMD, threads, tail calls), or do not
	// export what the ABI needs with the right signatures.
	ErrInvalidModule = v1.Errorf(v1.CodeMalformed, "invalid policy module")
	// ErrImportRefused: the module imports something outside the ABI.
	ErrImportRefused = v1.Errorf(v1.CodePermissionDenied, "policy module imports outside the allowlist")
	// ErrABIVersion: the module speaks another version of the hook ABI.
	ErrABIVersion = v1.Errorf(v1.CodeVersionMismatch, "policy ABI version not supported")
	// ErrDeadline: a hook ran past its deadline and was stopped.
	ErrDeadline = v1.Errorf(v1.CodeTimeout, "policy hook overran its deadline")
	// ErrMemoryLimit: the guest tried to grow its memory past the limit.
	ErrMemoryLimit = v1.Errorf(v1.CodeQuotaExceeded, "policy reached its memory limit")
	// ErrTrap: the guest trapped, exited, or reported a failure from a hook.
	ErrTrap = v1.Errorf(v1.CodeInternal, "policy trapped")
	// ErrInvalidDecision: a hook returned something the ABI does not allow (a
	// tenant that is not ready, a candidate that does not exist).
	ErrInvalidDecision = v1.Errorf(v1.CodeInvalidArgument, "policy returned an invalid decision")
	// ErrABI: the guest misused a host function (a pointer outside its
	// memory, a map handle it never opened).
	ErrABI = v1.Errorf(v1.CodeInvalidArgument, "policy misused the hook ABI")
	// ErrClosed: the Instance or Module was closed.
	ErrClosed = v1.Errorf(v1.CodeRevoked, "policy closed")
)

// Limits bound what a policy may use. Zero fields take the defaults.
type Limits struct {
	// Memory is the most linear memory the guest may have, in bytes (rounded
	// down to 64 KiB pages). Default 64 MiB.
	Memory uint64
	// Deadline is how long one hook call may run. Default 20 ms: far above
	// what a hook needs (microseconds), so that a loaded machine or a GC
	// pause of the daemon does not eject a sound policy.
	Deadline time.Duration
	// InitDeadline bounds instantiation, the reactor's _initialize and
	// gpuos_init, which set up the guest's runtime. Default 1 s.
	InitDeadline time.Duration
}

// Defaults of Limits.
const (
	DefaultMemory       = 64 << 20
	DefaultDeadline     = 20 * time.Millisecond
	DefaultInitDeadline = time.Second
)

func (l Limits) withDefaults() Limits {
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.Deadline <= 0 {
		l.Deadline = DefaultDeadline
	}
	if l.InitDeadline <= 0 {
		l.InitDeadline = DefaultInitDeadline
	}
	return l
}

// Options configure Compile.
type Options struct {
	Limits Limits
	// Log receives the guest's output lines (debug level) and ejections.
	// Nil: discarded.
	Log *slog.Logger
}

// Module is a verified, compiled policy. Instantiate runs copies of it.
type Module struct {
	name   string
	sum    [32]byte
	size   int
	wasm   []byte // instrumented
	limits Limits
	log    *slog.Logger
	hooks  uint64 // bit set of the hooks the module exports
	info   ModuleInfo

	mu     sync.Mutex
	cache  wazero.CompilationCache // closed when the module and its instances are
	refs   int                     // the module itself (until Close) and each live instance
	closed bool
}

// ModuleInfo describes a compiled module.
type ModuleInfo struct {
	Name   string
	SHA256 string // of the module as loaded, hex
	Size   int    // bytes as loaded
	Hooks  []Hook // exported hooks
	// Imports are the host functions it imports, "module.name".
	Imports []string
	// CheckSites is how many fuel checks the pass inserted (function entries
	// plus loop headers).
	CheckSites int
	Limits     Limits
}

// Compile validates a policy module and prepares it to run: the bytes must
// be a WebAssembly module within the enabled features, import only the ABI's
// host functions and the WASI subset (see wasi.go), export
// gpuos_abi_version and hooks with the ABI's signatures, and instantiate and
// initialize within its limits with the right ABI version. A module that
// passes may still misbehave later; Instance stops it then.
func Compile(ctx context.Context, name string, wasm []byte, opts Options) (*Module, error) {
	m := &Module{name: name, sum: sha256.Sum256(wasm), size: len(wasm), limits: opts.Limits.withDefaults(), log: opts.Log}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.limits.Memory < 1<<16 || m.limits.Memory > 4<<30 {
		return nil, v1.Errorf(v1.CodeInvalidArgument, "policy memory limit %d out of range [64 KiB, 4 GiB]", m.limits.Memory)
	}
	ins, err := instrument(wasm)
	if err != nil {
		return nil, fmt.Errorf("compile policy %q: %v: %w", name, err, ErrInvalidModule)
	}
	if ins.memPages<<16 > m.limits.Memory {
		return nil, fmt.Errorf("compile policy %q: memory starts at %d bytes, over the limit of %d: %w", name, ins.memPages<<16, m.limits.Memory, ErrMemoryLimit)
	}
	if err := checkImportKinds(ins); err != nil {
		return nil, fmt.Errorf("compile policy %q: %w", name, err)
	}
	m.wasm = ins.wasm
	m.cache = wazero.NewCompilationCache()
	m.refs = 1
	rt := m.runtime(ctx)
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, m.wasm)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("compile policy %q: %v: %w", name, err, ErrInvalidModule)
	}
	if err := m.check(cm); err != nil {
		m.Close()
		return nil, fmt.Errorf("compile policy %q: %w", name, err)
	}
	m.info = ModuleInfo{Name: name, SHA256: hex.EncodeToString(m.sum[:]), Size: len(wasm), CheckSites: ins.loops + ins.funcs, Limits: m.limits}
	for h := Hook(0); h < numHooks; h++ {
		if m.hooks&(1<<h) != 0 {
			m.info.Hooks = append(m.info.Hooks, h)
		}
	}
	for _, imp := range ins.funcImports {
		m.info.Imports = append(m.info.Imports, imp.module+"."+imp.name)
	}
	// A trial run: the ABI version, the reactor's initialization and the
	// exchange area are checked now rather than when the policy is used.
	inst, err := m.Instantiate(ctx, nil)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("compile policy %q: %w", name, err)
	}
	inst.Close()
	return m, nil
}

// runtime returns a fresh wazero runtime configured for policies.
func (m *Module) runtime(ctx context.Context) wazero.Runtime {
	cfg := wazero.NewRuntimeConfig().
		WithCoreFeatures(api.CoreFeaturesV2 &^ api.CoreFeatureSIMD).
		WithMemoryLimitPages(uint32(m.limits.Memory >> 16)).
		WithCompilationCache(m.cache).
		WithCustomSections(false).
		WithDebugInfoEnabled(false)
	return wazero.NewRuntimeWithConfig(ctx, cfg)
}

// checkImportKinds refuses imports that are not functions: a policy gets no
// memory, table or global from outside.
func checkImportKinds(ins *instrumented) error {
	if len(ins.otherImports) == 0 {
		return nil
	}
	var s []string
	for _, imp := range ins.otherImports {
		s = append(s, fmt.Sprintf("%s %s.%s", imp.kind, imp.module, imp.name))
	}
	return fmt.Errorf("imports %s: %w", strings.Join(s, ", "), ErrImportRefused)
}

// check enforces the import allowlist and the export signatures.
func (m *Module) check(cm wazero.CompiledModule) error {
	var refused []string
	imps := cm.ImportedFunctions()
	for i, f := range imps {
		mod, name, _ := f.Import()
		if i >= len(imps)-2 { // the pass's own imports
			continue
		}
		var want hostFunc
		var ok bool
		switch mod {
		case ModuleName:
			want, ok = hostFuncs[name]
		case wasiModule:
			want, ok = wasiFuncs[name]
		}
		if !ok || isInjected(name) {
			refused = append(refused, mod+"."+name)
			continue
		}
		if !slices.Equal(f.ParamTypes(), want.params) || !slices.Equal(f.ResultTypes(), want.results) {
			refused = append(refused, fmt.Sprintf("%s.%s with signature %s", mod, name, sig(f.ParamTypes(), f.ResultTypes())))
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("imports %s: %w", strings.Join(refused, ", "), ErrImportRefused)
	}
	exps := cm.ExportedFunctions()
	need := func(name string, params, results []api.ValueType, required bool) (bool, error) {
		f, ok := exps[name]
		if !ok {
			if required {
				return false, fmt.Errorf("no export %s: %w", name, ErrInvalidModule)
			}
			return false, nil
		}
		if !slices.Equal(f.ParamTypes(), params) || !slices.Equal(f.ResultTypes(), results) {
			return false, fmt.Errorf("export %s has signature %s, want %s: %w", name,
				sig(f.ParamTypes(), f.ResultTypes()), sig(params, results), ErrInvalidModule)
		}
		return true, nil
	}
	if _, err := need(exportVersion, nil, []api.ValueType{i32}, true); err != nil {
		return err
	}
	for _, x := range []struct {
		name            string
		params, results []api.ValueType
	}{{exportHooks, nil, []api.ValueType{i64}}, {exportExchange, []api.ValueType{i32}, []api.ValueType{i32}}, {exportInitialize, nil, nil}} {
		if _, err := need(x.name, x.params, x.results, false); err != nil {
			return err
		}
	}
	for h := Hook(0); h < numHooks; h++ {
		d := hookDefs[h]
		ok, err := need(d.name, d.params, d.results, false)
		if err != nil {
			return err
		}
		if ok {
			m.hooks |= 1 << h
		}
	}
	if m.hooks&(1<<HookDispatch|1<<HookPressure) != 0 {
		if _, ok := exps[exportExchange]; !ok {
			return fmt.Errorf("exports on_dispatch or on_pressure but no %s: %w", exportExchange, ErrInvalidModule)
		}
	}
	if m.hooks == 0 {
		return fmt.Errorf("exports no hook: %w", ErrInvalidModule)
	}
	return nil
}

func sig(params, results []api.ValueType) string {
	name := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return name(params) + " -> " + name(results)
}

// Name returns the module's name.
func (m *Module) Name() string { return m.name }

// Info describes the module.
func (m *Module) Info() ModuleInfo { return m.info }

// Has reports whether the module exports a hook.
func (m *Module) Has(h Hook) bool { return h < numHooks && m.hooks&(1<<h) != 0 }

// Close releases the module: no further Instantiate; the compiled code is
// freed once the instances already running are closed too.
func (m *Module) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	return m.release()
}

// acquire takes a reference for a new instance.
func (m *Module) acquire() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.refs++
	return nil
}

func (m *Module) release() error {
	m.mu.Lock()
	m.refs--
	last := m.refs == 0
	m.mu.Unlock()
	if last {
		return m.cache.Close(context.Background())
	}
	return nil
}

// seed derives the guest's random stream from the module's hash.
func (m *Module) seed() uint64 {
	s := binary.LittleEndian.Uint64(m.sum[:8])
	if s == 0 {
		s = 1
	}
	return s
}
