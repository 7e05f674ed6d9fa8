package driver

import (
	"sync"
	"sync/atomic"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/cap"
	"github.com/gpuos/gpuos/internal/mem"
	"github.com/gpuos/gpuos/internal/sched"
)

// bufferObj is device memory in a session's window: an allocation the session
// made (KindBuffer) or another session's buffer attached through a grant
// (KindMapping).
type bufferObj struct {
	alloc *mem.Allocation
	addr  uint64
	size  uint64
	kind  cap.Kind
}

// programObj is a loaded module.
type programObj struct {
	mod     backend.Module
	kernels []string
	name    string
	guard   *guardedProgram // loaded through the guard, or trusted SASS; nil otherwise (guard.go)

	slicing *programSlicing // its kernels' sliced twins; nil if none (slicing.go)
}

// kernelObj is a kernel looked up in a program.
type kernelObj struct {
	fn        backend.Function
	name      string
	paramSize uint32
	prog      *programObj

	slicing *kernelSlicing // its sliced twin; nil if none (slicing.go)
	done    func(error)    // what its launches' Done is (guard.go's guardDone), made once
}

// streamObj is a client stream: one backend stream.
type streamObj struct {
	st  backend.Stream
	sms int // SMs its kernels run on: a partition's (reserve_sms); 0: the device's
}

// fenceObj is an event recorded on a stream. Its record is issued by the
// scheduler, in order with the session's other work; until then it is pending.
type fenceObj struct {
	ev     backend.Event
	issued chan struct{} // closed once the record was issued (or failed to be)
	err    atomic.Pointer[error]
	once   sync.Once

	rec *sched.Command // the record: a wait for the fence is issued after it

	// spin: the record enqueues word, a fence behind the event, for the
	// scheduler's spinner (spinsLowFences); word is written before issued
	// is closed. watches: the spinner's channels of the waits of f it took
	// (a wait that timed out leaves its watch on until the fence is reached).
	spin      bool
	word      backend.Fence
	watchesMu sync.Mutex
	watches   []<-chan error
}

// watched notes a watch of f by the scheduler's spinner.
func (f *fenceObj) watched(done <-chan error) {
	f.watchesMu.Lock()
	f.watches = append(f.watches, done)
	f.watchesMu.Unlock()
}

// releaseWatches waits until the scheduler's spinner no longer looks at f,
// so that its event can be destroyed.
func (f *fenceObj) releaseWatches() {
	f.watchesMu.Lock()
	defer f.watchesMu.Unlock()
	for _, done := range f.watches {
		for range done {
		}
	}
	f.watches = nil
}

func (f *fenceObj) markIssued(err error) {
	f.once.Do(func() {
		if err != nil {
			f.err.Store(&err)
		}
		close(f.issued)
	})
}

func (f *fenceObj) issueErr() error {
	if p := f.err.Load(); p != nil {
		return *p
	}
	return nil
}

// grantObj is a buffer offered to other sessions under a token.
type grantObj struct {
	buf    *bufferObj
	token  [16]byte
	rights cap.Rights
}

// globalRange is a module global a session looked up: copies may address it.
type globalRange struct {
	size uint64
	prog *programObj
}
