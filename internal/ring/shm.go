//go:build linux

package ring

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Shm is a shared memory object (a memfd) mapped into this process.
type Shm struct {
	mu  sync.Mutex
	fd  int // -1 once taken or closed
	mem []byte
}

// Create makes size bytes of zeroed shared memory named name (the name shows
// in /proc/PID/fd and maps only), seals it so that it can neither shrink nor
// grow, and maps it read-write. populate pre-faults the pages, so that the hot
// path takes no page faults; use it for small objects. ErrUnsupported if the
// kernel has no memfd.
func Create(name string, size int, populate bool) (*Shm, error) {
	return create(name, size, populate, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
}

// CreateReadOnlyShared is Create for memory only this process writes: it is
// also sealed against writes through any mapping or descriptor made from
// now on (F_SEAL_FUTURE_WRITE), so a peer it is sent to can map it only
// read-only (OpenReadOnly) and cannot write it through the descriptor.
// ErrUnsupported if the kernel cannot seal that way (before Linux 5.1).
func CreateReadOnlyShared(name string, size int) (*Shm, error) {
	return create(name, size, true, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_FUTURE_WRITE|unix.F_SEAL_SEAL)
}

// create makes the memfd, maps it read-write, then adds seals: after the
// mapping, which F_SEAL_FUTURE_WRITE would refuse.
func create(name string, size int, populate bool, seals int) (*Shm, error) {
	if size <= 0 || size > maxShm {
		return nil, fmt.Errorf("create shared memory of %d bytes: %w", size, ErrLayout)
	}
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("%w: memfd_create: %v", ErrUnsupported, err)
	}
	fail := func(what string, err error) (*Shm, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("create shared memory: %s: %w", what, err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fail("ftruncate", err)
	}
	mem, err := mmap(fd, size, unix.PROT_READ|unix.PROT_WRITE, populate)
	if err != nil {
		return fail("mmap", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Munmap(mem)
		if seals&unix.F_SEAL_FUTURE_WRITE != 0 {
			err = fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
		return fail("seal", err)
	}
	return &Shm{fd: fd, mem: mem}, nil
}

// Open maps shared memory that a peer created and sent: fd must be a memfd of
// exactly size bytes, sealed against shrinking (else ErrNotSealed), so that a
// later truncation cannot turn accesses into SIGBUS. Open owns fd from now on,
// and closes it on error.
func Open(fd int, size int, populate bool) (*Shm, error) {
	return open(fd, size, unix.F_SEAL_SHRINK, unix.PROT_READ|unix.PROT_WRITE, populate)
}

// OpenReadOnly maps, read-only, shared memory a peer made with
// CreateReadOnlyShared: fd must be a memfd of exactly size bytes sealed
// against shrinking and against writes (else ErrNotSealed). It owns fd from
// now on, and closes it on error.
func OpenReadOnly(fd int, size int) (*Shm, error) {
	return open(fd, size, unix.F_SEAL_SHRINK|unix.F_SEAL_FUTURE_WRITE, unix.PROT_READ, true)
}

// open checks that fd is a memfd of size bytes with the seals want, and maps it.
func open(fd, size, want, prot int, populate bool) (*Shm, error) {
	fail := func(err error) (*Shm, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("open shared memory: %w", err)
	}
	if size <= 0 || size > maxShm {
		return fail(fmt.Errorf("%w: %d bytes", ErrLayout, size))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(size) {
		return fail(fmt.Errorf("%w: descriptor is %d bytes (mode %#o), want %d", ErrLayout, st.Size, st.Mode, size))
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&want != want {
		return fail(ErrNotSealed)
	}
	mem, err := mmap(fd, size, prot, populate)
	if err != nil {
		return fail(err)
	}
	return &Shm{fd: fd, mem: mem}, nil
}

func mmap(fd, size, prot int, populate bool) ([]byte, error) {
	flags := unix.MAP_SHARED
	if populate {
		flags |= unix.MAP_POPULATE
	}
	mem, err := unix.Mmap(fd, 0, size, prot, flags)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	return mem, nil
}

// Bytes returns the mapping, or nil after Close. It is valid until Close.
func (s *Shm) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mem
}

// FD returns the descriptor, or -1 once it was taken or closed.
func (s *Shm) FD() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fd
}

// TakeFD hands the descriptor to the caller (to send it to the peer, say); the
// mapping stays. It returns -1 if it was already taken.
func (s *Shm) TakeFD() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	fd := s.fd
	s.fd = -1
	return fd
}

// Close unmaps the memory and closes the descriptor if it is still held.
// Every Producer, Consumer and Staging on it must be closed first.
func (s *Shm) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.mem != nil {
		err = unix.Munmap(s.mem)
		s.mem = nil
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	return err
}
