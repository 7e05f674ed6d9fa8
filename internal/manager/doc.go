// Package manager is the gpuos daemon's manager process (gpuos serve): it
// authenticates clients, spawns and supervises one driver process per device,
// places sessions on drivers and hands each client a direct connection to its
// driver, and answers administrative requests (ps, audit).
//
// Authentication: the kernel tells the manager each client's uid (SO_PEERCRED);
// a client may also present a token and name the tenant it wants to act as. The
// configuration decides which tenant, if any, that makes it.
//
// Session placement: the manager creates a socket pair, gives one end to the
// driver (AttachSession, over the driver's control connection) and the other to
// the client (SCM_RIGHTS, with the SessionOpened reply). From then on the
// client talks to the driver directly; the manager is off the hot path.
//
// Supervision: a driver that exits (a lost device context, SIGKILL) takes its
// sessions with it — their clients see DeviceLost — and is restarted with
// exponential backoff, so the next session works. The manager itself never
// touches a GPU, so a device fault cannot take it down.
//
// Lock order: Manager.mu, then driverProc.mu. No lock is held across a call to a
// driver or a client.
package manager
