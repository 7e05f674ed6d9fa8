package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/gpuos/gpuos/api/v1"
	"go.yaml.in/yaml/v3"
)

// Errors returned by this package.
var (
	ErrInvalid = v1.Errorf(v1.CodeInvalidArgument, "invalid configuration")
)

//go:embed default.yaml
var defaultYAML []byte

// Config is the daemon's configuration.
type Config struct {
	Socket       string `yaml:"socket"`        // control socket path; empty = the default
	Backend      string `yaml:"backend"`       // auto, sim or cuda; empty = auto
	DeviceMemory Size   `yaml:"device_memory"` // cap on device memory gpuos uses; 0 = all
	AuditLog     string `yaml:"audit_log"`     // JSON-lines audit file; empty = beside the socket
	Policy       string `yaml:"policy"`        // scheduling policy at start; empty = fair
	// ReserveSMs keeps at least this many SMs free for tenants of class
	// high: every other tenant's streams run on the rest (CUDA green
	// contexts; the driver rounds up, to 8 SMs on an H100). A high-priority
	// kernel then starts at once instead of waiting for best-effort blocks
	// to end. 0 = none.
	ReserveSMs int           `yaml:"reserve_sms"`
	Limits     SessionLimits `yaml:"limits"` // per-session resource limits
	Tenants    []Tenant      `yaml:"tenants"`
	// TrustedModules is the operator's allowlist of machine-code (SASS-only)
	// modules, as hex SHA-256 digests of the image loaded: a tenant with
	// trust: trusted may load exactly these without the PTX guard (their
	// pointer arguments are checked at launch). Every other SASS-only module
	// is refused.
	TrustedModules []string `yaml:"trusted_modules"`
}

// SessionLimits bound what one session may hold; 0 means the built-in default.
type SessionLimits struct {
	Handles    int `yaml:"handles"`     // live handles of all kinds
	Buffers    int `yaml:"buffers"`     // live buffers
	InFlight   int `yaml:"in_flight"`   // submissions released to the device, not yet complete
	QueueDepth int `yaml:"queue_depth"` // submissions waiting in the daemon's queues
}

// Default per-session limits, used where the configuration says 0.
const (
	DefaultHandles    = 1 << 16
	DefaultBuffers    = 1 << 15
	DefaultInFlight   = 64
	DefaultQueueDepth = 4096
)

// Tenant is one principal: the processes that authenticate as it share its quota.
type Tenant struct {
	Name string `yaml:"name"`
	// UIDs whose processes may act as this tenant; "self" is the daemon's own user.
	// Empty means any user that presents the token.
	UIDs  []UID  `yaml:"uids"`
	Token string `yaml:"token"` // shared secret a client presents (GPUOS_TOKEN); empty = none
	// TokenFile names a file holding the token, so secrets stay out of the config.
	TokenFile string   `yaml:"token_file"`
	Memory    Size     `yaml:"memory"`      // device-memory quota across all sessions; 0 = unlimited
	Weight    int      `yaml:"weight"`      // compute share weight; 0 = 1
	CopyShare int      `yaml:"copy_weight"` // copy-bandwidth share weight; 0 = Weight
	Priority  Priority `yaml:"priority"`    // scheduling class
	// PrioritySet reports whether the document named the tenant's priority.
	// If it did not, each session's class comes from its process's nice
	// value (negative: high, positive: low).
	PrioritySet bool `yaml:"-"`
	// Rights the tenant's sessions may hold; empty = all. Names: alloc, load,
	// launch, copy, grant, stream.
	Rights []string `yaml:"rights"`
	// Trust is the tier for code this tenant loads: guarded (PTX is rewritten so no
	// access leaves the session's window), trusted (allowlisted SASS runs with its
	// pointer arguments checked) or isolated (its own driver process). Empty = guarded.
	Trust string `yaml:"trust"`
}

// RightNames lists the session rights a tenant can be given, in bit order.
var RightNames = []string{"alloc", "load", "launch", "copy", "grant", "stream"}

// TrustTiers lists the valid trust tiers.
var TrustTiers = []string{"guarded", "trusted", "isolated"}

// UID is a numeric user id, or the daemon's own user when written "self".
type UID struct {
	Self bool
	ID   uint32
}

func (u *UID) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: uid must be a number or \"self\"", n.Line)
	}
	if n.Value == "self" {
		*u = UID{Self: true}
		return nil
	}
	id, err := strconv.ParseUint(n.Value, 10, 32)
	if err != nil {
		return fmt.Errorf("line %d: uid %q is not a number or \"self\"", n.Line, n.Value)
	}
	*u = UID{ID: uint32(id)}
	return nil
}

// Resolve returns the numeric uid, with self being the given uid.
func (u UID) Resolve(self uint32) uint32 {
	if u.Self {
		return self
	}
	return u.ID
}

// Priority is a scheduling class; higher classes run first under the priority policy.
type Priority int

// Priority classes.
const (
	PriorityLow    Priority = -1
	PriorityNormal Priority = 0
	PriorityHigh   Priority = 1
)

func (p Priority) String() string {
	switch p {
	case PriorityLow:
		return "low"
	case PriorityNormal:
		return "normal"
	case PriorityHigh:
		return "high"
	}
	return strconv.Itoa(int(p))
}

// ParsePriority parses a class name (low, normal, high).
func ParsePriority(s string) (Priority, error) {
	switch s {
	case "low", "best-effort":
		return PriorityLow, nil
	case "", "normal":
		return PriorityNormal, nil
	case "high":
		return PriorityHigh, nil
	}
	return 0, fmt.Errorf("unknown priority class %q (want low, normal or high)", s)
}

func (p *Priority) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParsePriority(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*p = v
	return nil
}

// Size is a byte count written as a number with an optional unit: 512MiB, 8GiB, 1.5GB.
type Size uint64

var units = []struct {
	suffix string
	mult   uint64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseSize parses a size such as "8GiB", "512M", "1.5GB" or "4096".
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	if t == "" {
		return 0, fmt.Errorf("size %q has no number", s)
	}
	if n, err := strconv.ParseUint(t, 10, 64); err == nil {
		if n != 0 && n > ^uint64(0)/mult {
			return 0, fmt.Errorf("size %q overflows", s)
		}
		return Size(n * mult), nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f != f {
		return 0, fmt.Errorf("size %q is not a number of bytes", s)
	}
	if v := f * float64(mult); v < 1<<63 {
		return Size(v), nil
	}
	return 0, fmt.Errorf("size %q overflows", s)
}

func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*s = v
	return nil
}

// String formats the size with the largest binary unit that divides it.
func (s Size) String() string {
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if uint64(s) >= u.mult && uint64(s)%u.mult == 0 {
			return strconv.FormatUint(uint64(s)/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatUint(uint64(s), 10) + "B"
}

// Default returns the embedded default configuration.
func Default() *Config {
	c, err := Parse(defaultYAML)
	if err != nil {
		panic("config: embedded default is invalid: " + err.Error())
	}
	return c
}

// Load reads and validates a configuration file. Token files are read relative
// to the configuration's directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.readTokenFiles(dirOf(path)); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i+1]
	}
	return ""
}

func (c *Config) readTokenFiles(dir string) error {
	for i := range c.Tenants {
		t := &c.Tenants[i]
		if t.TokenFile == "" {
			continue
		}
		p := t.TokenFile
		if !strings.HasPrefix(p, "/") {
			p = dir + p
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("tenant %s: read token file: %w", t.Name, err)
		}
		t.Token = strings.TrimSpace(string(b))
		if t.Token == "" {
			return fmt.Errorf("%w: tenant %s: token file %s is empty", ErrInvalid, t.Name, p)
		}
	}
	return c.validateTokens()
}

// Parse decodes and validates a configuration document.
func Parse(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty document", ErrInvalid)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	c.markPriorities(data)
	return &c, nil
}

func (c *Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	switch c.Backend {
	case "", "auto", "sim", "cuda":
	default:
		return bad("backend %q (want auto, sim or cuda)", c.Backend)
	}
	if len(c.Tenants) == 0 {
		return bad("no tenants")
	}
	if c.ReserveSMs < 0 {
		return bad("reserve_sms %d is negative", c.ReserveSMs)
	}
	l := c.Limits
	if l.Handles < 0 || l.Buffers < 0 || l.InFlight < 0 || l.QueueDepth < 0 {
		return bad("negative session limit")
	}
	names := map[string]bool{}
	for i := range c.Tenants {
		t := &c.Tenants[i]
		if t.Name == "" || strings.ContainsAny(t.Name, " \t\n/") {
			return bad("tenant %d: name %q must be non-empty with no spaces or slashes", i+1, t.Name)
		}
		if names[t.Name] {
			return bad("tenant %s is listed twice", t.Name)
		}
		names[t.Name] = true
		if len(t.UIDs) == 0 && t.Token == "" && t.TokenFile == "" {
			return bad("tenant %s has neither uids nor a token: nobody could authenticate as it", t.Name)
		}
		if t.Token != "" && t.TokenFile != "" {
			return bad("tenant %s has both token and token_file", t.Name)
		}
		if t.Weight < 0 || t.CopyShare < 0 {
			return bad("tenant %s: negative weight", t.Name)
		}
		if t.Weight == 0 {
			t.Weight = 1
		}
		if t.CopyShare == 0 {
			t.CopyShare = t.Weight
		}
		for _, r := range t.Rights {
			if !slices.Contains(RightNames, r) {
				return bad("tenant %s: unknown right %q (want one of %s)", t.Name, r, strings.Join(RightNames, ", "))
			}
		}
		if t.Trust == "" {
			t.Trust = "guarded"
		}
		if !slices.Contains(TrustTiers, t.Trust) {
			return bad("tenant %s: unknown trust tier %q (want one of %s)", t.Name, t.Trust, strings.Join(TrustTiers, ", "))
		}
	}
	if err := c.validateTrustedModules(); err != nil {
		return err
	}
	return c.validateTokens()
}

func (c *Config) validateTokens() error {
	tokens := map[string]string{}
	for _, t := range c.Tenants {
		if t.Token == "" {
			continue
		}
		if other, dup := tokens[t.Token]; dup {
			return fmt.Errorf("%w: tenants %s and %s share a token", ErrInvalid, other, t.Name)
		}
		tokens[t.Token] = t.Name
	}
	return nil
}

// SessionLimitsOrDefault returns the limits with defaults filled in.
func (c *Config) SessionLimitsOrDefault() SessionLimits {
	l := c.Limits
	if l.Handles == 0 {
		l.Handles = DefaultHandles
	}
	if l.Buffers == 0 {
		l.Buffers = DefaultBuffers
	}
	if l.InFlight == 0 {
		l.InFlight = DefaultInFlight
	}
	if l.QueueDepth == 0 {
		l.QueueDepth = DefaultQueueDepth
	}
	return l
}

// Tenant returns the tenant with the given name.
func (c *Config) Tenant(name string) (*Tenant, bool) {
	for i := range c.Tenants {
		if c.Tenants[i].Name == name {
			return &c.Tenants[i], true
		}
	}
	return nil, false
}

// Human formats the size for people: one decimal in the largest binary unit
// that keeps the number at least 1 (12.0MiB, 512B).
func (s Size) Human() string {
	v := float64(s)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if v < 1024 || u == "TiB" {
			if u == "B" {
				return strconv.FormatUint(uint64(s), 10) + "B"
			}
			return strconv.FormatFloat(v, 'f', 1, 64) + u
		}
		v /= 1024
	}
	return ""
}
