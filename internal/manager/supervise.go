package manager

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/wire"
	"golang.org/x/sys/unix"
)

// driverProc supervises the driver process of one device.
type driverProc struct {
	m       *Manager
	ordinal int

	mu       sync.Mutex
	ctl      *wire.Client // nil while the driver is down
	cmd      *exec.Cmd
	info     *v1.Devices
	lastErr  error
	restarts int
	stopped  bool
	exited   chan struct{} // closed when the supervisor loop ends
}

func closeFD(fd int) { unix.Close(fd) }

// spawn starts supervising the driver of a device.
func (m *Manager) spawn(ctx context.Context, ordinal int) *driverProc {
	d := &driverProc{m: m, ordinal: ordinal, exited: make(chan struct{})}
	m.mu.Lock()
	m.drivers = append(m.drivers, d)
	m.mu.Unlock()
	go d.supervise(ctx)
	return d
}

// supervise runs the driver, restarting it with exponential backoff whenever it
// exits, until ctx ends. The backoff resets after a driver ran for a minute.
func (d *driverProc) supervise(ctx context.Context) {
	defer close(d.exited)
	backoff := d.m.opts.MinBackoff
	for ctx.Err() == nil {
		started := time.Now()
		err := d.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		d.m.log.Warn("driver exited; restarting", "device", d.ordinal, "err", err, "backoff", backoff)
		d.m.audit.Log(audit.Event{Kind: audit.KindDriverExit, Detail: map[string]any{"device": d.ordinal,
			"restart_in": backoff.String()}}.WithError(err))
		if time.Since(started) > time.Minute {
			backoff = d.m.opts.MinBackoff
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, d.m.opts.MaxBackoff)
		d.mu.Lock()
		d.restarts++
		d.mu.Unlock()
	}
}

// runOnce starts the driver, waits until it is ready, serves as its supervisor
// until it exits, and returns why it exited.
func (d *driverProc) runOnce(ctx context.Context) error {
	mine, theirs, err := wire.SocketPair()
	if err != nil {
		return err
	}
	o := d.m.opts
	args := append([]string{}, o.DriverCommand[1:]...)
	args = append(args, "--control-fd", "3", "--device", strconv.Itoa(d.ordinal), "--backend", o.Backend,
		"--audit", o.AuditLog)
	if o.DeviceMemory != 0 {
		args = append(args, "--device-memory", strconv.FormatUint(o.DeviceMemory, 10))
	}
	if n := d.m.cfg.ReserveSMs; n > 0 {
		args = append(args, "--reserve-sms", strconv.Itoa(n))
	}
	l := d.m.cfg.SessionLimitsOrDefault()
	args = append(args, "--limits", fmt.Sprintf("handles=%d,buffers=%d,in_flight=%d,queue_depth=%d",
		l.Handles, l.Buffers, l.InFlight, l.QueueDepth))
	args = append(args, o.DriverArgs...)
	cmd := exec.Command(o.DriverCommand[0], args...)
	cmd.ExtraFiles = []*os.File{os.NewFile(uintptr(theirs), "control")}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if len(o.DriverEnv) > 0 {
		cmd.Env = append(os.Environ(), o.DriverEnv...)
	}
	// The driver dies with the manager, so no orphan holds the GPU.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	cmd.ExtraFiles[0].Close()
	if err != nil {
		closeFD(mine)
		d.setDown(err)
		return fmt.Errorf("start driver: %w", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	conn, err := wire.FromFD(mine)
	if err != nil {
		cmd.Process.Kill()
		return fmt.Errorf("driver control connection: %w", <-waited)
	}
	ctl := wire.NewClient(conn)
	info, err := handshake(ctx, ctl)
	var stopped bool
	if err == nil {
		stopped, err = d.configure(ctx, ctl, cmd, info)
	}
	if err != nil {
		ctl.Close()
		cmd.Process.Kill()
		werr := <-waited
		d.setDown(err)
		return fmt.Errorf("driver handshake: %w (exit: %v)", err, werr)
	}
	d.m.audit.Log(audit.Event{Kind: audit.KindDriverStart, Detail: map[string]any{"device": d.ordinal,
		"pid": cmd.Process.Pid, "backend": info.Backend}})
	if stopped {
		cmd.Process.Kill()
	}

	select {
	case err = <-waited:
	case <-ctx.Done():
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-waited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			err = <-waited
		}
	}
	ctl.Close()
	if err == nil {
		err = fmt.Errorf("driver exited")
	}
	d.setDown(err)
	d.m.dropSessions(d.ordinal)
	return err
}

// configureTimeout bounds the configuring of a driver that started (loading
// the operator's policies into it, its policy and shares), during which
// changes to the configuration wait.
const configureTimeout = time.Minute

// configure gives a driver that completed its handshake the active
// configuration and makes it available to clients, under the manager's
// configMu, and reports whether supervision was stopped meanwhile.
func (d *driverProc) configure(ctx context.Context, ctl *wire.Client, cmd *exec.Cmd, info *v1.Devices) (stopped bool, err error) {
	d.m.configMu.Lock()
	defer d.m.configMu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, configureTimeout)
	defer cancel()
	if err := d.m.configureDriver(cctx, ctl); err != nil {
		return false, err
	}
	if h := d.m.testHookConfigured; h != nil {
		h()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctl, d.cmd, d.info, d.lastErr = ctl, cmd, info, nil
	return d.stopped, nil
}

func handshake(ctx context.Context, ctl *wire.Client) (*v1.Devices, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a real GPU's context creation takes ~0.4 s
	defer cancel()
	var hr v1.HelloReply
	if err := ctl.Call(ctx, v1.NewHello(v1.RoleControl, "", "gpuos manager"), &hr); err != nil {
		return nil, err
	}
	var info v1.Devices
	if err := ctl.Call(ctx, &v1.DriverInfo{}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// setDown marks the driver unavailable until it is ready again.
func (d *driverProc) setDown(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctl, d.cmd, d.lastErr = nil, nil, err
}

// waitReady waits until the driver is up and returns what it reported. A
// control connection that has already broken counts as down even before the
// supervisor has noticed the exit. With starting (the driver's first start),
// a driver that exits before it is ready ends the wait with why: one that
// cannot start (a bad setting in its environment, no device) would
// otherwise be restarted for ever while clients wait.
func (d *driverProc) waitReady(ctx context.Context, starting bool) (*v1.Devices, error) {
	for {
		d.mu.Lock()
		info, ctl, lastErr := d.info, d.ctl, d.lastErr
		d.mu.Unlock()
		if ctl != nil && ctl.Err() == nil {
			return info, nil
		}
		if starting && lastErr != nil {
			return nil, fmt.Errorf("driver exited before it was ready: %w", lastErr)
		}
		select {
		case <-d.exited:
			return nil, v1.Errorf(v1.CodeDeviceLost, "driver of device %d stopped", d.ordinal)
		case <-ctx.Done():
			if lastErr != nil {
				return nil, fmt.Errorf("%w: %v", ctx.Err(), lastErr)
			}
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// control returns the driver's control client, waiting (up to ctx, at most 10 s)
// for a driver that is restarting.
func (d *driverProc) control(ctx context.Context) (*wire.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		if _, err := d.waitReady(ctx, false); err != nil {
			return nil, v1.Errorf(v1.CodeDeviceLost, "driver of device %d is not running: %v", d.ordinal, err)
		}
		// A driver that dies between the two looks is waited for again:
		// waitReady sees its connection broken and waits for the next one.
		if ctl, err := d.controlNow(); err == nil {
			return ctl, nil
		}
	}
}

func (d *driverProc) controlNow() (*wire.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctl == nil || d.ctl.Err() != nil {
		return nil, v1.Errorf(v1.CodeDeviceLost, "driver of device %d is not running", d.ordinal)
	}
	return d.ctl, nil
}

func (d *driverProc) pid() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil || d.cmd.Process == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

// stop ends supervision; the supervisor terminates the driver.
func (d *driverProc) stop() {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	<-d.exited
}

// dropSessions forgets the sessions of a driver that exited.
func (m *Manager) dropSessions(device int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, s := range m.sessions {
		if s.device == device {
			delete(m.sessions, id)
		}
	}
}
