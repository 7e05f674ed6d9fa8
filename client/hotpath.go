package client

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/wire"
)

// Transports a session can use (Options.Transport).
const (
	// TransportRing puts a session's requests on shared-memory rings and its
	// bulk copies through a shared staging area: asynchronous calls cost no
	// system call, and large copies are pipelined through page-locked memory.
	TransportRing = "ring"
	// TransportSocket sends every request, data included, on the session's
	// socket.
	TransportSocket = "socket"
)

// HotPath tunes the ring transport. A zero field takes the environment
// variable named beside it, else the default; sizes in the environment may
// carry a unit (K, KiB, M, MiB, G, GiB).
type HotPath struct {
	// Spin is how long a waiter polls a ring before it sleeps
	// ($GPUOS_RING_SPIN, a Go duration; default 50µs, none on one CPU).
	// Negative: never poll.
	Spin time.Duration
	// SubmitRing and CompleteRing are the rings' sizes in bytes
	// ($GPUOS_SUBMIT_RING, $GPUOS_COMPLETE_RING; default: the driver's, 512
	// and 256 KiB).
	SubmitRing, CompleteRing int
	// Staging is the staging area's size in bytes ($GPUOS_STAGING; default:
	// the driver's, 64 MiB); negative: no staging, copies go inline.
	Staging int
	// StagingChunk is a staging slot's size, the unit large copies are
	// pipelined in: the copy into the staging area of one chunk overlaps the
	// device copy of the one before ($GPUOS_STAGING_CHUNK; default: the
	// driver's, 2 MiB).
	StagingChunk int
	// InlineMax is the largest copy sent inline in its request; larger ones go
	// through the staging area ($GPUOS_INLINE_MAX; default 256 KiB).
	InlineMax int
	// Copiers is how many goroutines copy a large copy's data into or out of
	// the staging area at once, each its own chunks ($GPUOS_STAGING_COPIERS;
	// default DefaultCopiers(); negative: one).
	Copiers int
}

const defaultInlineMax = 256 << 10

// DefaultCopiers is the default of HotPath.Copiers: half the CPUs, at most
// 8. A copy from or to ordinary (pageable) memory is bound by this process's
// memcpy into the page-locked staging area: one thread copies a few GB/s
// (about 6 on the lent H100's host), the device's DMA more than 50, so the
// copy scales with copiers until memory bandwidth runs out; half the CPUs
// leave the rest to the application and the driver, and 8 reach the
// bandwidth of a server's memory. One CPU, or two, copy with one: correct,
// and no slower than before.
func DefaultCopiers() int { return min(8, max(1, runtime.NumCPU()/2)) }

func (h HotPath) withEnv() (HotPath, error) {
	var err error
	size := func(v *int, env string) {
		if *v != 0 || err != nil {
			return
		}
		if s := os.Getenv(env); s != "" {
			n, perr := parseSize(s)
			if perr != nil {
				err = v1.Errorf(v1.CodeInvalidArgument, "$%s: %v", env, perr)
				return
			}
			*v = n
		}
	}
	size(&h.SubmitRing, "GPUOS_SUBMIT_RING")
	size(&h.CompleteRing, "GPUOS_COMPLETE_RING")
	size(&h.Staging, "GPUOS_STAGING")
	size(&h.StagingChunk, "GPUOS_STAGING_CHUNK")
	size(&h.InlineMax, "GPUOS_INLINE_MAX")
	size(&h.Copiers, "GPUOS_STAGING_COPIERS")
	if h.InlineMax == 0 {
		h.InlineMax = defaultInlineMax
	}
	switch {
	case h.Copiers == 0:
		h.Copiers = DefaultCopiers()
	case h.Copiers < 0:
		h.Copiers = 1
	}
	if h.SubmitRing < 0 || h.CompleteRing < 0 || h.StagingChunk < 0 || h.InlineMax < 0 {
		err = v1.Errorf(v1.CodeInvalidArgument, "negative hot path size in %+v", h)
	}
	return h, err
}

// parseSize reads a byte count with an optional binary unit.
func parseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(t))
	if err != nil || n > (1<<40)/mult || n < -(1<<40)/mult {
		return 0, fmt.Errorf("size %q is not a byte count", s)
	}
	return n * mult, nil
}

// hotSession is what a session knows of its hot path.
type hotSession struct {
	opts    HotPath
	rings   bool  // requests go on rings
	ringErr error // why not, if rings were wanted

	mu         sync.Mutex
	stager     *stager
	stagingErr error         // why copies stay inline (no staging), once tried
	hosts      []*HostBuffer // shared host memory, found by address

	// completion is the page a high-class session waits for its work on
	// (completion.go); set once, when the rings open.
	completion *completion
}

// startHotPath moves a new session onto rings unless told not to. Only a bad
// option is an error: if rings cannot be had, the session uses its socket.
func (s *Session) startHotPath(ctx context.Context, o Options) error {
	h, err := o.HotPath.withEnv()
	if err != nil {
		return err
	}
	s.hot = &hotSession{opts: h}
	transport := o.Transport
	if transport == "" {
		transport = os.Getenv("GPUOS_TRANSPORT")
	}
	switch transport {
	case "", TransportRing:
	case TransportSocket:
		s.hot.stagingErr = v1.Errorf(v1.CodeUnsupported, "socket transport")
		return nil
	default:
		return v1.Errorf(v1.CodeInvalidArgument, "transport %q: want %q or %q", transport, TransportRing, TransportSocket)
	}
	if h.Staging < 0 {
		s.hot.stagingErr = v1.Errorf(v1.CodeUnsupported, "staging disabled")
	}
	s.hot.ringErr = s.openRings(ctx, h)
	s.hot.rings = s.hot.ringErr == nil
	if s.hot.rings {
		// Unsupported (not of the high class, or not asked for) leaves
		// synchronizes to the driver.
		s.hot.completion, _ = s.openCompletion(ctx)
	}
	return nil
}

// openRings asks the driver for rings and moves the session's requests onto
// them. On error the session goes on on its socket (a driver that offered
// rings takes the next request on the socket as the answer).
func (s *Session) openRings(ctx context.Context, h HotPath) error {
	var ro v1.RingOpened
	fds, err := s.rpc.CallFDs(ctx, &v1.OpenRing{SubmitBytes: uint32(min(h.SubmitRing, 1<<30)),
		CompleteBytes: uint32(min(h.CompleteRing, 1<<30))}, &ro, nil)
	if err != nil {
		return fmt.Errorf("open rings: %w", err)
	}
	fd, err := oneFD(fds, "open rings")
	if err != nil {
		return err
	}
	sq, cq := int(ro.SubmitBytes), int(ro.CompleteBytes)
	shm, err := ring.Open(fd, wire.RingBytes(sq, cq), true)
	if err != nil {
		return fmt.Errorf("open rings: %w", err)
	}
	if err := s.rpc.UseRings(shm.Bytes(), sq, cq, ring.Options{Spin: ringSpin(h.Spin, ro.SpinNs)}, func() { shm.Close() }); err != nil {
		shm.Close()
		return fmt.Errorf("open rings: %w", err)
	}
	return nil
}

// ringSpin is how long the session's rings poll: what the program or
// $GPUOS_RING_SPIN chose, else the driver's advice (longer for a
// latency-critical session), else the default.
func ringSpin(chosen time.Duration, advisedNs uint64) time.Duration {
	if chosen != 0 || os.Getenv(ring.SpinEnv) != "" || advisedNs == 0 || advisedNs > uint64(time.Second) {
		return chosen
	}
	return time.Duration(advisedNs)
}

// Transport returns how the session reaches its driver: TransportRing or
// TransportSocket.
func (s *Session) Transport() string {
	if s.hot != nil && s.hot.rings {
		return TransportRing
	}
	return TransportSocket
}

// staging returns the session's staging area if a copy of n bytes should use
// it, opening it on first use; nil means inline.
func (s *Session) staging(ctx context.Context, n int) *stager {
	h := s.hot
	if h == nil || n <= h.opts.InlineMax {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stager == nil && h.stagingErr == nil {
		h.stager, h.stagingErr = s.openStaging(ctx, h.opts)
	}
	return h.stager
}

func (s *Session) openStaging(ctx context.Context, h HotPath) (*stager, error) {
	var so v1.StagingOpened
	fds, err := s.rpc.CallFDs(ctx, &v1.OpenStaging{Bytes: uint64(max(h.Staging, 0)), SlotBytes: uint64(h.StagingChunk)}, &so, nil)
	if err != nil {
		return nil, fmt.Errorf("open staging: %w", err)
	}
	fd, err := oneFD(fds, "open staging")
	if err != nil {
		return nil, err
	}
	slots, slot := int(so.Slots), int(min(so.SlotBytes, ring.MaxSlotSize))
	if slots < 1 || slots > ring.MaxSlots {
		closeFD(fd)
		return nil, v1.Errorf(v1.CodeMalformed, "open staging: %d slots", slots)
	}
	shm, err := ring.Open(fd, ring.StagingBytes(slots, slot), false)
	if err != nil {
		return nil, fmt.Errorf("open staging: %w", err)
	}
	st, err := ring.NewStaging(shm.Bytes(), slots, slot, ring.Options{Spin: h.Spin})
	if err != nil {
		shm.Close()
		return nil, fmt.Errorf("open staging: %w", err)
	}
	g := &stager{shm: shm, st: st, slot: slot, copiers: h.Copiers,
		gen: make([]uint32, slots), busy: make([]bool, slots)}
	go func() { // the connection's end ends the staging area's waits
		<-s.rpc.Done()
		g.close()
	}()
	return g, nil
}
