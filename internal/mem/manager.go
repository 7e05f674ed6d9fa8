package mem

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

// Options configure a Manager. The zero value is usable.
type Options struct {
	// DeviceMemoryLimit caps the physical memory the manager holds (chunks of
	// allocations, slabs, the pool and the sink): gpuos serve --device-memory.
	// 0 means the device's total; a larger value is clamped to it.
	DeviceMemoryLimit uint64
	// MinWindow is the smallest window (default 1 GiB), rounded up to a power
	// of two.
	MinWindow uint64
	// SinkChunk is the size of the shared sink chunk (default: the
	// granularity), rounded up to a multiple of it. A larger sink backs more
	// granules per mapping, so a guard range costs fewer mappings.
	SinkChunk uint64
	// PoolLimit bounds the bytes of freed chunks kept for reuse. 0 means an
	// eighth of the device limit; a value below the granularity disables the pool.
	PoolLimit uint64
	// FreshChunksZeroed says the backend's CreateChunk returns zeroed memory
	// (sim does). When false, every fresh chunk is zeroed before its first use,
	// since in one driver process memory released by one tenant may come back
	// to another.
	FreshChunksZeroed bool
	// Quiesce, if set, is called before the manager changes a mapping inside a
	// window's GuardRange (replacing sink granules by a chunk or back, detaching
	// a share). On a GPU an access to a granule while it is being remapped
	// faults and poisons the whole context, so Quiesce must return only when no
	// kernel of the window's session can run until resume is called. It is
	// called with that window's lock held (never the manager's), so it must
	// not call the window's methods other than the lock-free Base, Size,
	// GuardRange, ID and Touch, nor wait for a goroutine that may be calling
	// them (Resolve, Alloc, ...): close the session's dispatch gate and wait
	// for its in-flight work on the device, without a handshake with its
	// dispatcher. It may be called for any window from any goroutine (an
	// owner's Free revokes attachments in other sessions' windows). nil means
	// the caller guarantees it otherwise.
	Quiesce func(w *Window) (resume func(), err error)

	// SwapLimit bounds the pinned host memory that holds evicted chunks
	// (gpuos serve --swap). 0 disables swapping: the device limit is then a
	// hard limit (ErrOutOfMemory). With swapping, tenants' allocations
	// together may exceed the device limit: when a chunk would not fit,
	// victims are evicted to host memory (see doc.go).
	SwapLimit uint64
	// SwapPiece is the largest pinned host buffer of the swap store (default
	// 64 MiB); larger chunks are held in several.
	SwapPiece uint64
	// SwapReserve is pinned host memory the swap store pins from the start,
	// in the background (within SwapLimit), so that even the first evictions
	// copy at once instead of first pinning their buffers (gpuos driver
	// --swap-reserve; the driver reserves one and a half times the device
	// limit when --device-memory caps it). 0: none.
	SwapReserve uint64
	// SwapPinners is how many pieces of host memory the swap store pins at
	// once (default 4): with SwapPinRegister the pages are faulted in (and
	// zeroed) on the pinning threads, so several go faster than one.
	SwapPinners int
	// SwapPinRegister pins host memory by mapping it, faulting it in and
	// having the backend register it (cuMemHostRegister) instead of with
	// AllocHost (cuMemHostAlloc); if registering fails once, the store uses
	// AllocHost from then on. On the lent H100's host (run 8) registering
	// pinned 9.4 GB/s against 2.5 GB/s for cuMemHostAlloc, which does not
	// go faster on several threads (the driver serialises it).
	SwapPinRegister bool
	// SwapAhead is how much pinned host memory the swap store keeps free,
	// pinning it in the background, once evictions have begun: so an
	// eviction finds its buffers pinned (default: an eighth of the device
	// limit; negative: none). Pinning is slow, about 2 GB/s on an H100 host
	// against about 55 GB/s for the copy itself.
	SwapAhead int64
	// Victims chooses what to evict: the on_pressure hook. nil means
	// LowestPriorityLRU.
	Victims VictimChooser
	// OnSwap, if set, is told of every eviction and swap-in once it is done
	// (audit, counters, waking the session's pager). It is called with
	// m's eviction lock held and must not call the manager. It is also told
	// once, from another goroutine, when the SwapReserve is pinned
	// (SwapReserved).
	OnSwap func(SwapEvent)
	// MinResidency is how long chunks made resident are kept from eviction,
	// so their session runs before it can be evicted again (default 50 ms;
	// negative: not at all).
	MinResidency time.Duration
}

// Manager is the memory manager of one device context. All methods are safe
// for concurrent use.
type Manager struct {
	dev         backend.Device
	gran        uint64
	shift       uint // log2(gran)
	limit       uint64
	minWindow   uint64
	sinkGran    uint64 // granules of the sink chunk
	poolLimit   uint64
	freshZeroed bool
	quiesceFn   func(*Window) (func(), error)

	// Swapping; swap is nil when it is disabled.
	swap         *swapStore
	chooser      VictimChooser
	onSwap       func(SwapEvent)
	minResidency time.Duration
	// evictMu serialises evictions and swap-ins; it comes first in the lock
	// order. The fields below it are guarded by it.
	evictMu       sync.Mutex
	outStream     backend.Stream // eviction copies (device to host)
	inStream      backend.Stream // swap-in copies (host to device)
	pendingIns    []pendingIn    // swap-ins whose copies may be in flight
	pendingResume []func()       // windows made resident, to resume after those copies
	pendingEvents []SwapEvent
	outgoing      []*outgoing     // evictions under way, oldest first
	outgoingPeak  int             // most evictions under way at once (for tests)
	events        []backend.Event // free events, to time and track copies
	noEvents      bool            // the backend has no events: the host times copies
	passEvicted   uint64          // bytes evicted in the MakeResident pass under way
	passCopyIn    time.Duration   // device time of its copies back

	evictions, swapIns              atomic.Uint64
	evictedBytes, swappedInBytes    atomic.Uint64
	evictNs, swapInNs, evictCopyNs  atomic.Uint64
	evictPinNs, evictPinned         atomic.Uint64
	swapInCopyNs                    atomic.Uint64
	chooserFallbacks, releaseErrors atomic.Uint64
	evictFailures                   atomic.Uint64 // evictions begun ahead that failed (and were undone)

	clock atomic.Uint64 // logical time for last-use stamps
	// sink is the shared sink chunk of sinkGran granules; sinkUnit one of a
	// granule (sink itself when sinkGran is 1) for the granules a run of
	// whole sinks leaves over: the driver maps only whole chunks.
	sink, sinkUnit backend.Chunk

	scrubMu     sync.Mutex // serialises scrubs on scrubStream; a leaf lock
	scrubStream backend.Stream
	scrubbed    atomic.Uint64

	mu         sync.Mutex
	closed     bool
	tenants    map[string]*Tenant
	windows    map[uint64]*Window
	nextWindow uint64
	physical   uint64 // bytes of chunks held or being created, sink included
	chunks     int    // chunks held, sink included
	pool       map[uint64][]*chunk
	pooled     uint64
}

// chunk is physical memory the manager holds.
type chunk struct {
	c    backend.Chunk
	size uint64
	// owner is the window whose allocation or slab the chunk backs (nil in the
	// pool); lastUse is the manager clock at its last known use. Both are for
	// eviction (see Candidates). owner is guarded by that window's lock.
	owner   *Window
	lastUse atomic.Uint64
	// Whose data the chunk may hold, so reuse by another tenant scrubs it.
	// clean: known to be zero. tenant nil and !clean: unknown or mixed.
	// Touched only by the one goroutine that holds the chunk outside the pool,
	// or under the chunk's share lock.
	clean  bool
	tenant *Tenant
	// slot holds the data while the chunk is evicted (c is then nil). It and
	// c change under the chunk's share lock (a slab's: its window's lock) with
	// m.evictMu held; slot is atomic so that listings may peek at it.
	slot atomic.Pointer[swapSlot]
	// protectUntil (unix ns) keeps a chunk just made resident from eviction.
	protectUntil atomic.Int64
	// evicting: an eviction of the chunk is under way (between
	// beginEviction and finishEviction); set with m.evictMu held.
	evicting atomic.Bool
}

// NewManager returns a manager for dev and creates the sink chunk. It does not
// own dev: Close leaves it open.
func NewManager(dev backend.Device, opts Options) (*Manager, error) {
	if dev == nil {
		return nil, fmt.Errorf("new memory manager: nil device: %w", ErrInvalidArgument)
	}
	gran := dev.Granularity()
	if gran == 0 || gran&(gran-1) != 0 || gran%allocAlign != 0 {
		return nil, v1.Errorf(v1.CodeUnsupported, "new memory manager: device granularity %#x is not a power of two of at least %d bytes", gran, allocAlign)
	}
	_, total, err := dev.MemoryInfo()
	if err != nil {
		return nil, fmt.Errorf("new memory manager: query device memory: %w", err)
	}
	limit := total
	if opts.DeviceMemoryLimit != 0 && opts.DeviceMemoryLimit < total {
		limit = opts.DeviceMemoryLimit
	}
	sinkSize := roundUp(max(opts.SinkChunk, gran), gran)
	if sinkSize == 0 || sinkSize > limit {
		return nil, fmt.Errorf("new memory manager: sink chunk of %d bytes does not fit the device limit of %d: %w", opts.SinkChunk, limit, ErrInvalidArgument)
	}
	minWindow := opts.MinWindow
	if minWindow == 0 {
		minWindow = 1 << 30
	}
	minWindow = nextPow2(max(minWindow, gran))
	if minWindow == 0 {
		return nil, fmt.Errorf("new memory manager: minimum window %d is too large: %w", opts.MinWindow, ErrInvalidArgument)
	}
	poolLimit := opts.PoolLimit
	if poolLimit == 0 {
		poolLimit = limit / 8
	}
	minRes := opts.MinResidency
	switch {
	case minRes == 0:
		minRes = 50 * time.Millisecond
	case minRes < 0:
		minRes = 0
	}
	m := &Manager{
		minResidency: minRes,
		onSwap:       opts.OnSwap,
		chooser:      opts.Victims,
		dev:          dev,
		gran:         gran,
		shift:        uint(bits.TrailingZeros64(gran)),
		limit:        limit,
		minWindow:    minWindow,
		sinkGran:     sinkSize / gran,
		poolLimit:    poolLimit,
		freshZeroed:  opts.FreshChunksZeroed,
		quiesceFn:    opts.Quiesce,
		tenants:      map[string]*Tenant{},
		windows:      map[uint64]*Window{},
		pool:         map[uint64][]*chunk{},
	}
	if m.chooser == nil {
		m.chooser = LowestPriorityLRU{}
	}
	if opts.SwapLimit > 0 {
		var ahead uint64
		switch {
		case opts.SwapAhead == 0:
			ahead = limit / 8
		case opts.SwapAhead > 0:
			ahead = uint64(opts.SwapAhead)
		}
		cfg := swapStoreConfig{piece: opts.SwapPiece, limit: opts.SwapLimit, reserve: opts.SwapReserve, ahead: ahead,
			gran: gran, pinners: opts.SwapPinners, register: opts.SwapPinRegister}
		if onSwap := opts.OnSwap; onSwap != nil {
			cfg.onReserve = func(n uint64, took time.Duration) {
				onSwap(SwapEvent{Kind: SwapReserved, Bytes: n, Duration: took})
			}
		}
		m.swap = newSwapStore(dev, cfg)
	}
	// The sink's contents are never read back by anyone who owns data, so
	// it is not scrubbed; see doc.go for what it means for tenants.
	if m.sink, err = dev.CreateChunk(sinkSize); err != nil {
		if m.swap != nil {
			m.swap.close() // it may be pinning its reserve
		}
		return nil, fmt.Errorf("new memory manager: create sink chunk: %w", err)
	}
	m.physical, m.chunks, m.sinkUnit = sinkSize, 1, m.sink
	if m.sinkGran > 1 {
		if m.sinkUnit, err = dev.CreateChunk(gran); err != nil {
			m.sink.Release()
			if m.swap != nil {
				m.swap.close()
			}
			return nil, fmt.Errorf("new memory manager: create granule sink chunk: %w", err)
		}
		m.physical, m.chunks = m.physical+gran, 2
	}
	return m, nil
}

// Granularity is the device's mapping unit: allocations of at least this size
// (or Shareable ones) get chunks of their own, rounded up to it.
func (m *Manager) Granularity() uint64 { return m.gran }

// Limit is the physical memory the manager may hold.
func (m *Manager) Limit() uint64 { return m.limit }

func (m *Manager) stamp() uint64 { return m.clock.Add(1) }

// sinkOf is the sink chunk a sink mapping of n granules maps: mapSink makes
// only mappings of sinkGran granules and of one.
func (m *Manager) sinkOf(n uint64) backend.Chunk {
	if n == m.sinkGran {
		return m.sink
	}
	return m.sinkUnit
}

// Tenant returns the tenant with the given name, creating it (unlimited) on
// first use. Tenants live as long as the manager.
func (m *Manager) Tenant(name string) *Tenant {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tenants[name]
	if t == nil {
		t = &Tenant{m: m, name: name}
		m.tenants[name] = t
	}
	return t
}

// Tenant is an account of memory: the sum over all its windows is held under
// its quota.
type Tenant struct {
	m        *Manager
	name     string
	quota    atomic.Uint64
	used     atomic.Uint64
	windows  atomic.Int64
	priority atomic.Int64

	evictions, swapIns atomic.Uint64
	swapped            atomic.Uint64 // bytes of its chunks in host memory now
}

// SetPriority sets the tenant's priority for victim choice: the built-in
// chooser evicts chunks of lower priorities first. The driver sets it from the
// tenant's scheduling class (higher is more important).
func (t *Tenant) SetPriority(p int) { t.priority.Store(int64(p)) }

// Priority returns what SetPriority set (0 by default).
func (t *Tenant) Priority() int { return int(t.priority.Load()) }

// SwapStats returns how many of the tenant's chunks were evicted and brought
// back so far, and how many bytes of its memory are in host memory now.
func (t *Tenant) SwapStats() (evictions, swapIns, swapped uint64) {
	return t.evictions.Load(), t.swapIns.Load(), t.swapped.Load()
}

// Name returns the tenant's name.
func (t *Tenant) Name() string { return t.name }

// SetQuota sets the bytes the tenant may hold across its windows; 0 means
// unlimited (the device limit still applies). Lowering it below the current
// usage refuses further allocations until usage drops; nothing is taken away.
// Windows opened later are sized for the new quota; open ones keep their size.
func (t *Tenant) SetQuota(bytes uint64) { t.quota.Store(bytes) }

// Usage returns the bytes charged to the tenant and its quota (0: unlimited).
func (t *Tenant) Usage() (used, quota uint64) { return t.used.Load(), t.quota.Load() }

// MemoryInfo is the tenant's view of device memory, for cuMemGetInfo: total is
// its quota (the device limit if it has none), free what it could still
// allocate now.
func (t *Tenant) MemoryInfo() (free, total uint64) {
	used, quota := t.Usage()
	total = t.m.limit
	if quota != 0 {
		total = quota
	}
	if used < total {
		free = total - used
	}
	m := t.m
	if m.swap != nil {
		// Others' memory can be evicted: what bounds the tenant is what one
		// window may map beside the sink.
		return min(free, m.limit-m.gran*m.sinkGran), total
	}
	m.mu.Lock()
	avail := m.limit - min(m.limit, m.physical-m.pooled)
	m.mu.Unlock()
	return min(free, avail), total
}

// charge adds n bytes to the tenant's usage unless that passes its quota.
func (t *Tenant) charge(n uint64) error {
	for {
		used, quota := t.used.Load(), t.quota.Load()
		if quota != 0 && (used+n > quota || used+n < used) {
			return fmt.Errorf("tenant %q holds %d of %d bytes and asked for %d more: %w", t.name, used, quota, n, ErrQuotaExceeded)
		}
		if t.used.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

func (t *Tenant) uncharge(n uint64) { t.used.Add(-n) }

// getChunk returns a chunk of size bytes for tenant t: from the pool, or
// created (after trimming the pool, and evicting if swapping is on and pr
// says who asks, when the device limit requires it). It takes m.mu only
// briefly and never across a backend call.
func (m *Manager) getChunk(size uint64, t *Tenant, pr *pressure) (*chunk, error) {
	c, reserved, err := m.takeOrReserve(size)
	if err != nil || c != nil {
		return c, err
	}
	if !reserved {
		if m.swap == nil || pr == nil {
			m.mu.Lock()
			held := m.physical
			m.mu.Unlock()
			return nil, fmt.Errorf("%d bytes more with %d held would pass the device limit of %d: %w", size, held, m.limit, ErrOutOfMemory)
		}
		if c, err = m.makeRoom(size, pr); err != nil || c != nil {
			return c, err
		}
	}
	// size bytes are reserved in m.physical while CreateChunk runs.
	c2, err := m.dev.CreateChunk(size)
	for tries := 0; err != nil && v1.CodeOf(err) == v1.CodeOutOfMemory && tries < maxShortTries; tries++ {
		// The device is shorter than our accounting says (memory gpuos does
		// not manage: module variables, other processes): give back the
		// pool, and evict if it held nothing, then try again.
		m.mu.Lock()
		trimmed := m.trimLocked(^uint64(0))
		m.mu.Unlock()
		if len(trimmed) == 0 {
			if m.swap == nil || pr == nil || !m.evictBytes(size, pr) {
				break
			}
			m.mu.Lock()
			trimmed = m.trimLocked(^uint64(0))
			m.mu.Unlock()
		}
		m.release(trimmed)
		c2, err = m.dev.CreateChunk(size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.physical -= size
		return nil, fmt.Errorf("create chunk of %d bytes: %w", size, err)
	}
	m.chunks++
	return &chunk{c: c2, size: size, clean: m.freshZeroed}, nil
}

// maxShortTries bounds how often getChunk frees memory and tries again when
// the device has less than the manager's accounting says.
const maxShortTries = 16

// trimLocked takes chunks out of the pool until need more bytes fit under the
// limit (or the pool is empty) and returns them for release. Largest first,
// so as few chunks as possible go.
func (m *Manager) trimLocked(need uint64) []*chunk {
	var out []*chunk
	if m.pooled == 0 || need != ^uint64(0) && m.physical+need <= m.limit {
		return nil
	}
	sizes := make([]uint64, 0, len(m.pool))
	for s, l := range m.pool {
		if len(l) > 0 {
			sizes = append(sizes, s)
		}
	}
	slices.Sort(sizes)
	for i := len(sizes) - 1; i >= 0; i-- {
		l := m.pool[sizes[i]]
		for len(l) > 0 && (need == ^uint64(0) || m.physical+need > m.limit) {
			c := l[len(l)-1]
			l = l[:len(l)-1]
			m.pooled -= c.size
			m.physical -= c.size
			m.chunks--
			out = append(out, c)
		}
		m.pool[sizes[i]] = l
	}
	return out
}

// release frees chunks already taken off the books.
func (m *Manager) release(cs []*chunk) error {
	var errs []error
	for _, c := range cs {
		if err := c.c.Release(); err != nil {
			errs = append(errs, fmt.Errorf("release chunk of %d bytes: %w", c.size, err))
		}
	}
	return errors.Join(errs...)
}

// putChunk returns an unmapped chunk: to the pool if it has room, else to the
// device. Its clean and tenant fields say whose data it holds.
func (m *Manager) putChunk(c *chunk) error {
	if slot := c.slot.Swap(nil); slot != nil {
		// Evicted: its data is in host memory and it holds no device memory.
		if c.owner != nil {
			c.owner.t.swapped.Add(-c.size)
		}
		m.swap.release(slot)
		c.owner = nil
		return nil
	}
	c.owner = nil
	m.mu.Lock()
	if !m.closed && m.pooled+c.size <= m.poolLimit {
		m.pool[c.size] = append(m.pool[c.size], c)
		m.pooled += c.size
		m.mu.Unlock()
		return nil
	}
	m.physical -= c.size
	m.chunks--
	m.mu.Unlock()
	return m.release([]*chunk{c})
}

// Trim releases every pooled chunk to the device, and the pinned host memory
// the swap store keeps for reuse.
func (m *Manager) Trim() error {
	m.mu.Lock()
	cs := m.trimLocked(^uint64(0))
	m.mu.Unlock()
	if m.swap != nil {
		m.swap.trim()
	}
	return m.release(cs)
}

// scrub zeroes size bytes at ptr, which must be mapped and accessible.
func (m *Manager) scrub(ptr backend.DevicePtr, size uint64) error {
	m.scrubMu.Lock()
	defer m.scrubMu.Unlock()
	if m.scrubStream == nil {
		s, err := m.dev.NewStream(0)
		if err != nil {
			return fmt.Errorf("create scrub stream: %w", err)
		}
		m.scrubStream = s
	}
	if err := m.scrubStream.Memset(ptr, 0, 4, size/4); err != nil {
		return fmt.Errorf("scrub %d bytes at %#x: %w", size, uint64(ptr), err)
	}
	if err := m.scrubStream.Synchronize(); err != nil {
		return fmt.Errorf("scrub %d bytes at %#x: %w", size, uint64(ptr), err)
	}
	m.scrubbed.Add(size)
	return nil
}

// needsScrub reports whether c may hold data that t must not see.
func (c *chunk) needsScrub(t *Tenant) bool { return !c.clean && c.tenant != t }

// Stats is a snapshot of the manager's accounting.
type Stats struct {
	Tenants []TenantStats // sorted by name
	Device  DeviceStats
}

// TenantStats is one tenant's accounting.
type TenantStats struct {
	Name      string
	Used      uint64 // bytes charged (see doc.go for what counts)
	Quota     uint64 // 0: unlimited
	Windows   int    // open windows
	Priority  int
	Evictions uint64 // chunks of the tenant evicted, in total
	SwapIns   uint64 // chunks of the tenant brought back, in total
	Swapped   uint64 // bytes of the tenant's chunks in host memory now
}

// DeviceStats is the manager's physical memory.
type DeviceStats struct {
	Physical uint64 // bytes of chunks held: allocations, slabs, pool, sink
	Pooled   uint64 // of which free chunks kept for reuse
	Limit    uint64
	Chunks   int    // chunks held, sink included
	Windows  int    // open windows
	Scrubbed uint64 // bytes zeroed before reuse by another tenant, in total

	// Swapping (all zero when it is disabled).
	SwapLimit        uint64        // Options.SwapLimit
	Swapped          uint64        // bytes of evicted chunks in host memory now
	SwapHeld         uint64        // pinned host bytes the swap store holds (in use and kept)
	Evictions        uint64        // chunks evicted, in total
	SwapIns          uint64        // chunks brought back, in total
	EvictedBytes     uint64        // bytes evicted, in total
	SwappedInBytes   uint64        // bytes brought back, in total
	EvictTime        time.Duration // time spent evicting (quiesce, pin, copy, unmap)
	EvictCopyTime    time.Duration // of which copying to host memory (device time where the backend has events)
	EvictPinTime     time.Duration // of which pinning host memory the store did not have ready
	EvictPinned      uint64        // bytes pinned by evictions themselves, in total
	SwapPinnedAhead  uint64        // bytes pinned ahead in the background, in total
	SwapInTime       time.Duration // time spent bringing back (map, copy)
	SwapInCopyTime   time.Duration // device time of the copies back
	ChooserFallbacks uint64        // victim choices the built-in made because the chooser failed
}

// Stats returns a snapshot of per-tenant and device accounting.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{Device: DeviceStats{
		Physical: m.physical,
		Pooled:   m.pooled,
		Limit:    m.limit,
		Chunks:   m.chunks,
		Windows:  len(m.windows),
		Scrubbed: m.scrubbed.Load(),

		Evictions:        m.evictions.Load(),
		SwapIns:          m.swapIns.Load(),
		EvictedBytes:     m.evictedBytes.Load(),
		SwappedInBytes:   m.swappedInBytes.Load(),
		EvictTime:        time.Duration(m.evictNs.Load()),
		EvictCopyTime:    time.Duration(m.evictCopyNs.Load()),
		EvictPinTime:     time.Duration(m.evictPinNs.Load()),
		EvictPinned:      m.evictPinned.Load(),
		SwapInCopyTime:   time.Duration(m.swapInCopyNs.Load()),
		SwapInTime:       time.Duration(m.swapInNs.Load()),
		ChooserFallbacks: m.chooserFallbacks.Load(),
	}}
	if m.swap != nil {
		s.Device.SwapLimit = m.swap.limit
		u := m.swap.usage()
		s.Device.Swapped, s.Device.SwapHeld, s.Device.SwapPinnedAhead = u.used, u.held, u.pinnedAhead
	}
	for _, t := range m.tenants {
		used, quota := t.Usage()
		s.Tenants = append(s.Tenants, TenantStats{Name: t.name, Used: used, Quota: quota, Windows: int(t.windows.Load()),
			Priority: t.Priority(), Evictions: t.evictions.Load(), SwapIns: t.swapIns.Load(), Swapped: t.swapped.Load()})
	}
	sort.Slice(s.Tenants, func(i, j int) bool { return s.Tenants[i].Name < s.Tenants[j].Name })
	return s
}

// Candidate is a chunk that eviction could take (the seam for swapping; see doc.go).
type Candidate struct {
	Tenant   string
	Priority int               // the tenant's (Tenant.SetPriority)
	Window   uint64            // Window.ID
	Ptr      backend.DevicePtr // where it is mapped in its owner window
	Bytes    uint64
	LastUse  uint64 // manager clock: the later of the chunk's and its window's last use
	Shared   bool   // attached in other windows
	Slab     bool   // holds sub-allocations

	w *Window
	r *region
}

// Candidates lists every resident chunk backing an allocation or slab, least
// recently used first.
func (m *Manager) Candidates() []Candidate {
	var out []Candidate
	for _, w := range m.openWindows() {
		out = w.appendCandidates(out)
	}
	sortCandidates(out)
	for i := range out {
		out[i].w, out[i].r = nil, nil
	}
	return out
}

func sortCandidates(cs []Candidate) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].LastUse < cs[j].LastUse })
}

func (m *Manager) openWindows() []*Window {
	m.mu.Lock()
	defer m.mu.Unlock()
	ws := make([]*Window, 0, len(m.windows))
	for _, w := range m.windows {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].id < ws[j].id })
	return ws
}

// Close closes every window, releases the pool and the sink chunk. The device
// stays open. Calls after Close fail with ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.closed = true
	m.mu.Unlock()
	var errs []error
	for _, w := range m.openWindows() {
		if err := w.Close(); err != nil && !errors.Is(err, ErrWindowClosed) {
			errs = append(errs, err)
		}
	}
	m.mu.Lock()
	cs := m.trimLocked(^uint64(0))
	m.mu.Unlock()
	errs = append(errs, m.release(cs))
	if err := m.sink.Release(); err != nil {
		errs = append(errs, fmt.Errorf("release sink chunk: %w", err))
	}
	m.mu.Lock()
	m.physical -= m.gran * m.sinkGran
	m.chunks--
	m.mu.Unlock()
	if m.sinkUnit != m.sink {
		if err := m.sinkUnit.Release(); err != nil {
			errs = append(errs, fmt.Errorf("release granule sink chunk: %w", err))
		}
		m.mu.Lock()
		m.physical -= m.gran
		m.chunks--
		m.mu.Unlock()
	}
	m.scrubMu.Lock()
	if m.scrubStream != nil {
		errs = append(errs, m.scrubStream.Destroy())
		m.scrubStream = nil
	}
	m.scrubMu.Unlock()
	m.evictMu.Lock()
	errs = append(errs, m.drainEvictions(), m.finishSwapIns())
	for _, st := range []*backend.Stream{&m.outStream, &m.inStream} {
		if *st != nil {
			errs = append(errs, (*st).Destroy())
			*st = nil
		}
	}
	for _, ev := range m.events {
		errs = append(errs, ev.Destroy())
	}
	m.events = nil
	m.evictMu.Unlock()
	if m.swap != nil {
		m.swap.close()
	}
	return errors.Join(errs...)
}

func roundUp(v, to uint64) uint64 {
	r := (v + to - 1) / to * to
	if r < v {
		return 0
	}
	return r
}

// nextPow2 returns the smallest power of two >= v (1 for 0), or 0 on overflow.
func nextPow2(v uint64) uint64 {
	if v <= 1 {
		return 1
	}
	s := bits.Len64(v - 1)
	if s >= 64 {
		return 0
	}
	return 1 << s
}
