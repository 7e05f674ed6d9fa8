package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/wire"
)

// Options configure a Manager.
type Options struct {
	Config *config.Config // nil: the embedded default
	Socket string         // listening socket; "" = Config.Socket, else the default path
	// Backend is auto, sim or cuda ("" = Config.Backend, else auto).
	Backend string
	// DriverCommand starts a driver process; the manager appends its flags.
	// Nil means this executable with the "driver" subcommand.
	DriverCommand []string
	// DriverArgs are extra flags for every driver (e.g. the sim's memory size).
	DriverArgs []string
	// DriverEnv is added to the drivers' environment.
	DriverEnv []string
	AuditLog  string // "" = Config.AuditLog, else gpuos-audit.jsonl beside the socket
	// DeviceMemory caps the device memory drivers use (0 = Config.DeviceMemory).
	DeviceMemory uint64
	Log          *slog.Logger
	// Restart backoff bounds (0: 100 ms and 5 s).
	MinBackoff, MaxBackoff time.Duration
}

// DefaultSocket is $XDG_RUNTIME_DIR/gpuos.sock, else /run/gpuos/gpuos.sock.
func DefaultSocket() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "gpuos.sock")
	}
	return "/run/gpuos/gpuos.sock"
}

// Manager is the daemon's manager process.
type Manager struct {
	opts  Options
	cfg   *config.Config
	self  uint32
	log   *slog.Logger
	audit *audit.Logger
	ln    *net.UnixListener

	nextSession atomic.Uint64
	denied      atomic.Uint64 // clients refused at Hello, for metrics.go

	mu       sync.Mutex
	drivers  []*driverProc
	devices  *v1.Devices // what the first driver reported
	sessions map[uint64]*sessionRec
	closed   bool
	wg       sync.WaitGroup
	cancel   context.CancelFunc

	sched schedState  // the policy and the shares every driver gets (sched.go)
	pol   policyState // the loaded WebAssembly policies (policy.go)

	// configMu serializes changes to the drivers' configuration (policies
	// loaded and in use, shares) with the configuring of a driver that
	// starts: a change is sent to every running driver under it, and a new
	// driver is configured and made available under it, so a driver that
	// starts while an operator changes the configuration gets the change
	// either way. It is taken before mu, sched.mu and pol.mu.
	configMu sync.Mutex
	// testHookConfigured, if set, runs after a driver is configured and
	// before it is made available, with configMu held.
	testHookConfigured func()
}

// sessionRec is what the manager remembers of a session it placed.
type sessionRec struct {
	id     uint64
	tenant string
	device int
	pid    int32
	uid    uint32
}

// New validates options, opens the audit log and the listening socket.
// Start spawns the drivers; Serve accepts clients.
func New(opts Options) (*Manager, error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Default()
	}
	if opts.Socket == "" {
		opts.Socket = cfg.Socket
	}
	if opts.Socket == "" {
		opts.Socket = DefaultSocket()
	}
	if opts.Backend == "" {
		opts.Backend = cfg.Backend
	}
	if opts.Backend == "" {
		opts.Backend = "auto"
	}
	if opts.AuditLog == "" {
		opts.AuditLog = cfg.AuditLog
	}
	if opts.AuditLog == "" {
		opts.AuditLog = filepath.Join(filepath.Dir(opts.Socket), "gpuos-audit.jsonl")
	}
	if opts.DeviceMemory == 0 {
		opts.DeviceMemory = uint64(cfg.DeviceMemory)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.DriverCommand == nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable to start drivers: %w", err)
		}
		opts.DriverCommand = []string{exe, "driver"}
	}
	if err := os.MkdirAll(filepath.Dir(opts.Socket), 0o755); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	al, err := audit.Open(opts.AuditLog, audit.Options{})
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	ln, err := listen(opts.Socket)
	if err != nil {
		al.Close()
		return nil, err
	}
	m := &Manager{opts: opts, cfg: cfg, self: uint32(os.Getuid()), log: opts.Log, audit: al, ln: ln,
		sessions: map[uint64]*sessionRec{}}
	if err := m.initSched(); err != nil {
		ln.Close()
		al.Close()
		return nil, err
	}
	return m, nil
}

// listen binds the socket, replacing a stale one left by a daemon that died
// but refusing to steal one that a live daemon still answers on.
func listen(path string) (*net.UnixListener, error) {
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, v1.Errorf(v1.CodeBusy, "another gpuos daemon is listening on %s", path)
	}
	os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// Anyone may connect; authentication decides what they may do.
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("set socket permissions: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	return ln, nil
}

// Socket returns the path the manager listens on.
func (m *Manager) Socket() string { return m.opts.Socket }

// AuditLog returns the audit log's path.
func (m *Manager) AuditLog() string { return m.opts.AuditLog }

// Start spawns the driver of device 0, waits for it to report the devices, and
// spawns one driver for each further device.
func (m *Manager) Start(ctx context.Context) error {
	sctx, cancel := context.WithCancel(context.Background())
	m.mu.Lock()
	m.cancel = cancel
	m.mu.Unlock()
	first := m.spawn(sctx, 0)
	info, err := first.waitReady(ctx, true)
	if err != nil {
		cancel()
		first.stop()
		return fmt.Errorf("start driver for device 0: %w", err)
	}
	m.mu.Lock()
	m.devices = info
	m.mu.Unlock()
	for i := 1; i < len(info.Devices); i++ {
		m.spawn(sctx, i)
	}
	m.log.Info("gpuos manager started", "socket", m.opts.Socket, "backend", info.Backend, "devices", len(info.Devices))
	return nil
}

// Serve accepts clients until ctx ends or the manager is closed.
func (m *Manager) Serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		m.ln.Close()
	}()
	for {
		uc, err := m.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		c, err := wire.NewConn(uc)
		if err != nil {
			uc.Close()
			continue
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.serveClient(ctx, c)
		}()
	}
}

// Close stops the drivers and releases everything.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	drivers := m.drivers
	cancel := m.cancel
	m.mu.Unlock()
	m.ln.Close()
	if cancel != nil {
		cancel()
	}
	for _, d := range drivers {
		d.stop()
	}
	m.wg.Wait()
	return m.audit.Close()
}

// Drivers returns the pids of the running driver processes by device (0 for a
// driver that is restarting), for tests and diagnostics.
func (m *Manager) Drivers() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	pids := make([]int, len(m.drivers))
	for i, d := range m.drivers {
		pids[i] = d.pid()
	}
	return pids
}

// client is one connection to the manager: its peer and, after Hello, its tenant.
type client struct {
	cred   wire.Cred
	tenant *config.Tenant
	prog   string
}

func (m *Manager) serveClient(ctx context.Context, c *wire.Conn) {
	cred, err := c.PeerCred()
	if err != nil {
		c.Close()
		return
	}
	cl := &client{cred: cred}
	srv := &wire.Server{Endpoint: v1.EndpointManager,
		Handle: func(ctx context.Context, req *wire.Request) (v1.Message, []int, error) {
			return m.handle(ctx, cl, req)
		}}
	srv.Serve(ctx, c)
}

func (m *Manager) handle(ctx context.Context, cl *client, req *wire.Request) (v1.Message, []int, error) {
	if h, ok := req.Msg.(*v1.Hello); ok {
		t, err := authenticate(m.cfg, m.self, cl.cred.UID, h.Token, h.Tenant)
		if err != nil {
			m.denied.Add(1)
			m.audit.Log(audit.Event{Kind: audit.KindDeny, PID: cl.cred.PID, UID: audit.UID(cl.cred.UID),
				Detail: map[string]any{"request": "Hello", "program": h.Program, "tenant": h.Tenant}}.WithError(err))
			return nil, nil, err
		}
		cl.tenant, cl.prog = t, h.Program
		return &v1.HelloReply{Major: v1.Major, Minor: v1.Minor, Server: "gpuos manager", Backend: m.backendName()}, nil, nil
	}
	switch r := req.Msg.(type) {
	case *v1.ListDevices:
		m.mu.Lock()
		d := m.devices
		m.mu.Unlock()
		if d == nil {
			return nil, nil, v1.Errorf(v1.CodeDeviceLost, "no driver has started")
		}
		return d, nil, nil
	case *v1.OpenSession:
		return m.openSession(ctx, cl, r)
	case *v1.ListSessions:
		return &v1.Sessions{Sessions: m.listSessions(ctx, cl)}, nil, nil
	case *v1.AuditQuery:
		return m.auditQuery(cl, r)
	}
	if reply, ok, err := m.handlePolicy(ctx, cl, req.Msg); ok {
		return reply, nil, err
	}
	if reply, ok, err := m.handleSched(ctx, cl, req.Msg); ok {
		return reply, nil, err
	}
	return nil, nil, v1.Errorf(v1.CodeUnsupported, "%v is not served by the manager", req.Header.Type)
}

func (m *Manager) backendName() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.devices != nil {
		return m.devices.Backend
	}
	return ""
}

// operator reports whether a client may see every tenant's sessions and audit
// records: the daemon's own user and root.
func (m *Manager) operator(cl *client) bool { return cl.cred.UID == m.self || cl.cred.UID == 0 }

// tenantRights converts a tenant's configured right names to wire rights.
func tenantRights(t *config.Tenant) v1.Rights {
	if len(t.Rights) == 0 {
		return v1.AllSessionRights
	}
	var r v1.Rights
	for _, name := range t.Rights {
		for i, known := range config.RightNames {
			if name == known {
				r |= 1 << i
			}
		}
	}
	return r & v1.AllSessionRights
}

func (m *Manager) openSession(ctx context.Context, cl *client, r *v1.OpenSession) (v1.Message, []int, error) {
	t := cl.tenant
	m.mu.Lock()
	var d *driverProc
	if int(r.Device) < len(m.drivers) {
		d = m.drivers[r.Device]
	}
	m.mu.Unlock()
	if d == nil {
		return nil, nil, v1.Errorf(v1.CodeNotFound, "no device %d", r.Device)
	}
	rights := tenantRights(t)
	if r.Rights != 0 {
		rights &= r.Rights
	}
	// A driver that died a moment ago is restarted; try once more on it.
	msg, fds, err := m.attach(ctx, cl, d, r, rights)
	if errors.Is(err, wire.ErrConnLost) {
		msg, fds, err = m.attach(ctx, cl, d, r, rights)
	}
	return msg, fds, err
}

func (m *Manager) attach(ctx context.Context, cl *client, d *driverProc, r *v1.OpenSession, rights v1.Rights) (v1.Message, []int, error) {
	t := cl.tenant
	ctl, err := d.control(ctx)
	if err != nil {
		return nil, nil, err
	}
	clientEnd, driverEnd, err := wire.SocketPair()
	if err != nil {
		return nil, nil, fmt.Errorf("open session: %w", err)
	}
	id := m.nextSession.Add(1)
	share := m.shareOf(t)
	attach := &v1.AttachSession{SessionID: id, Tenant: t.Name, Rights: rights, MemoryQuota: share.Memory,
		Weight: share.Compute, Priority: m.sessionClass(t, cl.cred.PID), PID: cl.cred.PID, UID: cl.cred.UID, Label: r.Label,
		Trust: t.TrustTier(), TrustedModules: m.cfg.TrustedModuleHashes()}
	var att v1.SessionAttached
	_, err = ctl.CallFDs(ctx, attach, &att, []int{driverEnd})
	closeFD(driverEnd)
	if err != nil {
		closeFD(clientEnd)
		if ctl.Err() != nil {
			// The driver died during the call. Its supervisor may have
			// closed the connection (wire.ErrClosed, an invalid handle to
			// the caller) before the loss was seen: either way the device
			// was lost, and openSession tries its successor.
			return nil, nil, v1.Errorf(v1.CodeDeviceLost, "open session on device %d: its driver exited: %v", r.Device, err)
		}
		return nil, nil, fmt.Errorf("open session on device %d: %w", r.Device, err)
	}
	m.mu.Lock()
	m.sessions[id] = &sessionRec{id: id, tenant: t.Name, device: int(r.Device), pid: cl.cred.PID, uid: cl.cred.UID}
	m.mu.Unlock()
	return &v1.SessionOpened{SessionID: id, Tenant: t.Name, Rights: rights, WindowBase: att.WindowBase,
		WindowSize: att.WindowSize, MemoryQuota: share.Memory, Trust: attach.Trust}, []int{clientEnd}, nil
}

func (m *Manager) listSessions(ctx context.Context, cl *client) []v1.SessionStat {
	m.mu.Lock()
	drivers := append([]*driverProc(nil), m.drivers...)
	m.mu.Unlock()
	var out []v1.SessionStat
	for _, d := range drivers {
		ctl, err := d.controlNow()
		if err != nil {
			continue
		}
		var s v1.Sessions
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = ctl.Call(cctx, &v1.DriverStats{}, &s)
		cancel()
		if err != nil {
			continue
		}
		for _, st := range s.Sessions {
			if m.operator(cl) || st.Tenant == cl.tenant.Name {
				out = append(out, st)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (m *Manager) auditQuery(cl *client, r *v1.AuditQuery) (v1.Message, []int, error) {
	m.audit.Flush()
	f := audit.Filter{Tenant: r.Tenant, Limit: int(r.Limit), Tail: true}
	if r.Since != 0 {
		f.Since = time.Unix(0, r.Since)
	}
	if !m.operator(cl) {
		f.Tenant = cl.tenant.Name // tenants see their own records only
	}
	if f.Limit == 0 || f.Limit > 10000 {
		f.Limit = 10000
	}
	recs, _, err := audit.QueryFile(m.opts.AuditLog, f)
	if err != nil {
		return nil, nil, fmt.Errorf("read audit log: %w", err)
	}
	out := &v1.AuditLines{}
	for _, rec := range recs {
		out.Lines = append(out.Lines, string(rec.Line))
	}
	return out, nil, nil
}
