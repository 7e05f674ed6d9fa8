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
