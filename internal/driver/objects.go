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
	// is closed. watch: the spinner's watch of f, at most one: a fence once
	// reached (or failed) stays so, and waits after one that timed out wait
	// for its watch, so that a client looping on short timeouts adds none.
	spin    bool
	word    backend.Fence
	watchMu sync.Mutex
	watch   *fenceSpinWatch
}

// spinWatch returns the spinner's watch of f: the one it took already,
// else a new one if the spinner takes it (ok).
func (f *fenceObj) spinWatch(sch *sched.Scheduler) (w *fenceSpinWatch, ok bool) {
	f.watchMu.Lock()
	defer f.watchMu.Unlock()
	if f.watch != nil {
		return f.watch, true
	}
	w = &fenceSpinWatch{f: f, done: make(chan struct{})}
	if !sch.Watch(w) {
		return nil, false
	}
	f.watch = w
	return w, true
}

// releaseWatch waits until the scheduler's spinner no longer looks at f,
// so that its event can be destroyed.
func (f *fenceObj) releaseWatch() {
	f.watchMu.Lock()
	w := f.watch
	f.watchMu.Unlock()
	if w != nil {
		<-w.done
	}
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
