package v1

// ---- Driver: the shared-memory hot path ----------------------------------------
//
// A session connection may move its requests off the socket: OpenRing makes
// two rings in shared memory (package internal/ring), a submission ring the
// client writes requests to and a completion ring the driver writes replies
// to, and once the client has sent its first request on the submission ring
// the driver reads requests only there. The socket stays open for liveness
// (either end closing it ends the session) and for replies that carry file
// descriptors, which rings cannot. Requests keep one order: the driver serves
// them as they come off the ring, so a synchronous call after asynchronous
// ones is handled after them.
//
// OpenStaging makes a staging area for bulk copies: equal slots of shared
// memory that the driver registers as page-locked, so that device copies
// from and to them run asynchronously. A StagedCopy names a range in one slot;
// the driver stores the copy's generation in that slot's completion word when
// the device copy is done, and the client reuses the slot after that.

// OpenRing asks the driver to move the session's requests onto shared-memory
// rings. Sizes are data bytes; 0 takes the driver's default, other values are
// rounded up to a power of two and clamped to the driver's limits.
type OpenRing struct {
	SubmitBytes   uint32
	CompleteBytes uint32
}

func (*OpenRing) Type() Type { return TypeOpenRing }
func (m *OpenRing) Encode(e *Encoder) {
	e.PutUint32(m.SubmitBytes)
	e.PutUint32(m.CompleteBytes)
}
func (m *OpenRing) Decode(d *Decoder) error {
	m.SubmitBytes = d.Uint32()
	m.CompleteBytes = d.Uint32()
	return d.Err()
}

// RingOpened answers OpenRing with the rings' sizes. Its frame carries one
// file descriptor: a sealed memfd holding the submission ring (its control
// page, then SubmitBytes of data) followed by the completion ring.
type RingOpened struct {
	SubmitBytes   uint32
	CompleteBytes uint32
	// SpinNs is how long the driver advises the client to poll for a reply
	// before it sleeps, in nanoseconds; 0: the client's own default. The
	// driver advises a longer poll to latency-critical (high-class)
	// sessions, whose requests it polls for too.
	SpinNs uint64
}

func (*RingOpened) Type() Type { return TypeRingOpened }
func (m *RingOpened) Encode(e *Encoder) {
	e.PutUint32(m.SubmitBytes)
	e.PutUint32(m.CompleteBytes)
	e.PutUint64(m.SpinNs)
}
func (m *RingOpened) Decode(d *Decoder) error {
	m.SubmitBytes = d.Uint32()
	m.CompleteBytes = d.Uint32()
	m.SpinNs = d.Uint64()
	return d.Err()
}

// OpenStaging asks for a staging area of about Bytes bytes in slots of
// SlotBytes; 0 takes the driver's default, other values are rounded and
// clamped to its limits.
type OpenStaging struct {
	Bytes     uint64
	SlotBytes uint64
}

func (*OpenStaging) Type() Type { return TypeOpenStaging }
func (m *OpenStaging) Encode(e *Encoder) {
	e.PutUint64(m.Bytes)
	e.PutUint64(m.SlotBytes)
}
func (m *OpenStaging) Decode(d *Decoder) error {
	m.Bytes = d.Uint64()
	m.SlotBytes = d.Uint64()
	return d.Err()
}

// StagingOpened answers OpenStaging with the area's geometry. Its frame
// carries one file descriptor: a sealed memfd laid out as internal/ring's
// staging area of Slots slots of SlotBytes.
type StagingOpened struct {
	Slots     uint32
	SlotBytes uint64
}

func (*StagingOpened) Type() Type { return TypeStagingOpened }
func (m *StagingOpened) Encode(e *Encoder) {
	e.PutUint32(m.Slots)
	e.PutUint64(m.SlotBytes)
}
func (m *StagingOpened) Decode(d *Decoder) error {
	m.Slots = d.Uint32()
	m.SlotBytes = d.Uint64()
	return d.Err()
}

// StagedCopy copies Size bytes between device memory (Dev) and the staging
// area at Offset, on Stream: from the staging area for HtoD, into it for DtoH
// (no other direction). [Offset, Offset+Size) must lie in one slot; the
// driver checks it against the area (InvalidArgument). When the device copy
// is done (or failed, or was dropped) the driver stores Gen in the slot's
// completion word.
//
// Without Wait the reply comes once the copy is queued, and errors of the copy
// itself are deferred to the next synchronizing call, as for an asynchronous
// Memcpy; an error reply means nothing was queued and the completion word
// stays as it was. With Wait the reply comes once the copy is done and carries
// the session's deferred error, as a synchronous Memcpy does.
type StagedCopy struct {
	Stream uint64
	Dir    Dir
	Dev    Ref
	Offset uint64
	Size   uint64
	Gen    uint32
	Wait   bool
}

func (*StagedCopy) Type() Type { return TypeStagedCopy }
func (m *StagedCopy) Encode(e *Encoder) {
	e.PutUint64(m.Stream)
	e.PutUint8(uint8(m.Dir))
	e.putRef(m.Dev)
	e.PutUint64(m.Offset)
	e.PutUint64(m.Size)
	e.PutUint32(m.Gen)
	e.PutBool(m.Wait)
}
func (m *StagedCopy) Decode(d *Decoder) error {
	m.Stream = d.Uint64()
	m.Dir = Dir(d.Uint8())
	m.Dev = d.ref()
	m.Offset = d.Uint64()
	m.Size = d.Uint64()
	m.Gen = d.Uint32()
	m.Wait = d.Bool()
	if d.Err() == nil && m.Dir != DirHtoD && m.Dir != DirDtoH {
		d.Failf("staged copy direction %d, want HtoD or DtoH", m.Dir)
	}
	return d.Err()
}

// MapHost asks for Bytes of page-locked host memory shared with the driver:
// the client's equivalent of cuMemHostAlloc. Copies from and to it (HostCopy)
// need no staging and run asynchronously. The driver rounds Bytes up to whole
// pages and bounds what one session maps.
type MapHost struct {
	Bytes uint64
}

func (*MapHost) Type() Type          { return TypeMapHost }
func (m *MapHost) Encode(e *Encoder) { e.PutUint64(m.Bytes) }
func (m *MapHost) Decode(d *Decoder) error {
	m.Bytes = d.Uint64()
	return d.Err()
}

// HostMapped answers MapHost. Its frame carries one file descriptor: a sealed
// memfd of Bytes bytes, to map shared.
type HostMapped struct {
	Handle uint64 // names the memory in HostCopy and UnmapHost
	Bytes  uint64
}

func (*HostMapped) Type() Type { return TypeHostMapped }
func (m *HostMapped) Encode(e *Encoder) {
	e.PutUint64(m.Handle)
	e.PutUint64(m.Bytes)
}
func (m *HostMapped) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	m.Bytes = d.Uint64()
	return d.Err()
}

// UnmapHost releases host memory from MapHost once the session's work
// queued so far is done.
type UnmapHost struct {
	Handle uint64
}

func (*UnmapHost) Type() Type          { return TypeUnmapHost }
func (m *UnmapHost) Encode(e *Encoder) { e.PutUint64(m.Handle) }
func (m *UnmapHost) Decode(d *Decoder) error {
	m.Handle = d.Uint64()
	return d.Err()
}

// HostCopy copies Size bytes between device memory (Dev) and host memory
// from MapHost (Host, at Offset) on Stream: HtoD or DtoH. The host memory is
// read or written when the copy runs, as CUDA's asynchronous copies from
// page-locked memory are. It may be sent with NoReply; answered, the reply
// comes once the copy is done and carries the session's deferred error.
type HostCopy struct {
	Stream uint64
	Dir    Dir
	Dev    Ref
	Host   uint64
	Offset uint64
	Size   uint64
}

func (*HostCopy) Type() Type { return TypeHostCopy }
func (m *HostCopy) Encode(e *Encoder) {
	e.PutUint64(m.Stream)
	e.PutUint8(uint8(m.Dir))
	e.putRef(m.Dev)
	e.PutUint64(m.Host)
	e.PutUint64(m.Offset)
	e.PutUint64(m.Size)
}
func (m *HostCopy) Decode(d *Decoder) error {
	m.Stream = d.Uint64()
	m.Dir = Dir(d.Uint8())
	m.Dev = d.ref()
	m.Host = d.Uint64()
	m.Offset = d.Uint64()
	m.Size = d.Uint64()
	if d.Err() == nil && m.Dir != DirHtoD && m.Dir != DirDtoH {
		d.Failf("host copy direction %d, want HtoD or DtoH", m.Dir)
	}
	return d.Err()
}

// ---- Driver: completion on the client's side -----------------------------------
//
// A latency-critical (high-class) session may wait for its work without the
// driver on the path. OpenCompletion gives it a completion page: shared
// memory the driver maps for the device and seals so that the client can
// map it only read-only. The device writes the session's streams' fences
// into its words, and the guard's fault records for the session's guarded
// programs into its fault area. SynchronizeFences is Synchronize, except
// that the driver answers once the session's work is issued with where its
// fences will be written (FenceTargets) instead of waiting for them; the
// client waits until each word holds its number or a later one, then, if
// anything was written into the fault area, or the words were not reached
// in the time it waits, sends Synchronize, which waits in the driver and
// reports what failed. An empty FenceTargets means the driver waited
// itself: the session's work is done, as after Synchronize.

// WatchLaunches spares the session's synchronizes any request. Once it is
// answered, the driver publishes on the session's completion page, beside
// each stream's fence word, how many of the stream's launches sent after
// WatchLaunches it has issued with a fence behind them and that fence's
// number (internal/ring's page layout). A client that counts the Launch
// requests it writes (in the order they enter the submission ring) then
// waits for its launches by reading the page alone. It asks the driver
// (Synchronize) instead when it wrote any other request since the last
// synchronize the driver answered, when the page's count of calls moved
// (an asynchronous error to report), when the fault area is not clear, or
// when the page stops saying that the driver publishes. A session without a
// completion page, or whose page cannot cover its guarded programs' fault
// records, gets Unsupported.
type WatchLaunches struct{}

func (*WatchLaunches) Type() Type              { return TypeWatchLaunches }
func (*WatchLaunches) Encode(*Encoder)         {}
func (*WatchLaunches) Decode(d *Decoder) error { return d.Err() }

// OpenCompletion asks for the session's completion page. A session the
// driver does not poll fences for (not of the high class), or a device
// that cannot write host memory shared this way, gets Unsupported.
type OpenCompletion struct{}

func (*OpenCompletion) Type() Type              { return TypeOpenCompletion }
func (*OpenCompletion) Encode(*Encoder)         {}
func (*OpenCompletion) Decode(d *Decoder) error { return d.Err() }

// CompletionOpened answers OpenCompletion with the page's geometry. Its frame
// carries one file descriptor: a memfd of Bytes bytes, sealed against
// writes, to map read-only. Words fence words lie WordStride bytes apart
// from offset 0; the fault area is FaultsBytes at FaultsOffset.
type CompletionOpened struct {
	Bytes        uint32
	Words        uint32
	WordStride   uint32
	FaultsOffset uint32
	FaultsBytes  uint32
	// SpinNs is how long the driver advises the client to poll its words
	// before it asks the driver to wait instead.
	SpinNs uint64
}

func (*CompletionOpened) Type() Type { return TypeCompletionOpened }
func (m *CompletionOpened) Encode(e *Encoder) {
	e.PutUint32(m.Bytes)
	e.PutUint32(m.Words)
	e.PutUint32(m.WordStride)
	e.PutUint32(m.FaultsOffset)
	e.PutUint32(m.FaultsBytes)
	e.PutUint64(m.SpinNs)
}
func (m *CompletionOpened) Decode(d *Decoder) error {
	m.Bytes = d.Uint32()
	m.Words = d.Uint32()
	m.WordStride = d.Uint32()
	m.FaultsOffset = d.Uint32()
	m.FaultsBytes = d.Uint32()
	m.SpinNs = d.Uint64()
	return d.Err()
}

// SynchronizeFences is Synchronize for a session with a completion page: the
// reply says where to wait (FenceTargets).
type SynchronizeFences struct {
	Stream uint64
}

func (*SynchronizeFences) Type() Type          { return TypeSynchronizeFences }
func (m *SynchronizeFences) Encode(e *Encoder) { e.PutUint64(m.Stream) }
func (m *SynchronizeFences) Decode(d *Decoder) error {
	m.Stream = d.Uint64()
	return d.Err()
}

// FenceTarget is one word of the completion page and the number it must
// reach.
type FenceTarget struct {
	Word uint32
	Seq  uint32
}

// FenceTargets answers SynchronizeFences: the session's work is done once
// every target's word holds its Seq or a later number (int32(word-Seq) >= 0)
// and the fault area is still clear. Empty: it is done already.
type FenceTargets struct {
	Targets []FenceTarget
}

func (*FenceTargets) Type() Type { return TypeFenceTargets }
func (m *FenceTargets) Encode(e *Encoder) {
	e.PutCount(len(m.Targets))
	for _, t := range m.Targets {
		e.PutUint32(t.Word)
		e.PutUint32(t.Seq)
	}
}
func (m *FenceTargets) Decode(d *Decoder) error {
	m.Targets = m.Targets[:0]
	n := d.Count(8)
	for range n {
		m.Targets = append(m.Targets, FenceTarget{Word: d.Uint32(), Seq: d.Uint32()})
	}
	return d.Err()
}
