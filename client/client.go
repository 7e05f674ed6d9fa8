package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/wire"
)

// DefaultSocket is where the daemon listens unless told otherwise:
// $XDG_RUNTIME_DIR/gpuos.sock, else /run/gpuos/gpuos.sock.
func DefaultSocket() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "gpuos.sock")
	}
	return "/run/gpuos/gpuos.sock"
}

// Options configure Dial. Empty fields take their value from the environment
// that `gpuos run` sets up: GPUOS_SOCKET, GPUOS_TOKEN and GPUOS_TENANT.
type Options struct {
	Socket  string // the daemon's socket; default $GPUOS_SOCKET, else DefaultSocket()
	Token   string // credential for a token tenant; default $GPUOS_TOKEN
	Tenant  string // tenant to act as; default $GPUOS_TENANT, else the first that admits this client
	Program string // this program's name, for ps and the audit log; default os.Args[0]
	// Transport is how sessions reach their driver: TransportRing (the
	// default) or TransportSocket; default $GPUOS_TRANSPORT. A session that
	// cannot get rings uses its socket.
	Transport string
	HotPath   HotPath // tuning of the ring transport
}

func (o Options) withEnv() Options {
	pick := func(v, env, def string) string {
		if v != "" {
			return v
		}
		if e := os.Getenv(env); e != "" {
			return e
		}
		return def
	}
	o.Socket = pick(o.Socket, "GPUOS_SOCKET", DefaultSocket())
	o.Token = pick(o.Token, "GPUOS_TOKEN", "")
	o.Tenant = pick(o.Tenant, "GPUOS_TENANT", "")
	if o.Program == "" && len(os.Args) > 0 {
		o.Program = filepath.Base(os.Args[0])
	}
	return o
}

// Client is a connection to the gpuos daemon (the manager).
type Client struct {
	rpc     *wire.Client
	opts    Options
	backend string
	server  string
}

// Dial connects to the daemon and authenticates. A client the daemon does not
// know gets ErrPermissionDenied.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	opts = opts.withEnv()
	conn, err := wire.Dial(ctx, opts.Socket)
	if err != nil {
		return nil, fmt.Errorf("dial gpuos at %s: %w", opts.Socket, err)
	}
	rpc := wire.NewClient(conn)
	hello := v1.NewHello(v1.RoleClient, opts.Token, opts.Program)
	hello.Tenant = opts.Tenant
	var hr v1.HelloReply
	if err := rpc.Call(ctx, hello, &hr); err != nil {
		rpc.Close()
		return nil, fmt.Errorf("hello: %w", err)
	}
	return &Client{rpc: rpc, opts: opts, backend: hr.Backend, server: hr.Server}, nil
}

// Close ends the connection to the manager. Sessions already open are
// independent of it and stay open.
func (c *Client) Close() error { return c.rpc.Close() }

// Backend returns the daemon's backend: "cuda" or "sim".
func (c *Client) Backend() string { return c.backend }

// Device describes a GPU the daemon serves.
type Device = v1.DeviceInfo

// TrustTier is a tenant's trust tier (config: trust).
type TrustTier = v1.TrustTier

// Trust tiers.
const (
	TrustGuarded  = v1.TrustGuarded
	TrustTrusted  = v1.TrustTrusted
	TrustIsolated = v1.TrustIsolated
)

// Devices lists the daemon's devices, with the backend and CUDA driver version.
func (c *Client) Devices(ctx context.Context) ([]Device, error) {
	var d v1.Devices
	if err := c.rpc.Call(ctx, &v1.ListDevices{}, &d); err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	return d.Devices, nil
}

// SessionStat is a session's statistics, as gpuos ps shows them.
type SessionStat = v1.SessionStat

// Sessions lists the sessions the daemon serves (all tenants').
func (c *Client) Sessions(ctx context.Context) ([]SessionStat, error) {
	var s v1.Sessions
	if err := c.rpc.Call(ctx, &v1.ListSessions{}, &s); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return s.Sessions, nil
}

// Audit returns audit-log lines (JSON), oldest first: those since a time (unix
// nanoseconds, 0 for all), of one tenant ("" for all), at most limit (0: the
// daemon's default).
func (c *Client) Audit(ctx context.Context, since int64, tenant string, limit int) ([]string, error) {
	var a v1.AuditLines
	if err := c.rpc.Call(ctx, &v1.AuditQuery{Since: since, Tenant: tenant, Limit: uint32(limit)}, &a); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return a.Lines, nil
}

// SessionOptions configure OpenSession.
type SessionOptions struct {
	Device int    // device ordinal
	Rights Rights // rights to ask for; 0 asks for all the tenant has
	Label  string // shown by ps
}

// OpenSession opens a session on a device: a direct connection to the driver
// process that owns it, with its own memory window.
func (c *Client) OpenSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	var so v1.SessionOpened
	fds, err := c.rpc.CallFDs(ctx, &v1.OpenSession{Device: uint32(opts.Device), Rights: opts.Rights,
		Label: opts.Label, PID: int32(os.Getpid())}, &so, nil)
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	fd, err := oneFD(fds, "open session")
	if err != nil {
		return nil, err
	}
	conn, err := wire.FromFD(fd)
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	rpc := wire.NewClient(conn)
	var hr v1.HelloReply
	if err := rpc.Call(ctx, v1.NewHello(v1.RoleClient, "", c.opts.Program), &hr); err != nil {
		rpc.Close()
		return nil, fmt.Errorf("open session: hello to driver: %w", err)
	}
	s := &Session{rpc: rpc, id: so.SessionID, tenant: so.Tenant, rights: so.Rights,
		windowBase: so.WindowBase, windowSize: so.WindowSize, quota: so.MemoryQuota, trust: so.Trust}
	if err := s.startHotPath(ctx, c.opts); err != nil {
		rpc.Close()
		return nil, fmt.Errorf("open session: %w", err)
	}
	return s, nil
}
