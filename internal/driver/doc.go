// Package driver is a gpuos driver process: it owns one backend device context
// and serves the sessions the manager places on it.
//
// Each session is one client connection whose handles live in a cap.Table; the
// connection is the session capability, and what the session may do is what its
// rights admit (v1.Admit, from the one message table). Buffers live in the
// session's memory window (mem), device work goes through the scheduler (sched)
// to backend streams, and every state-changing call is charged to the session's
// ledger and written to the audit log. Launches and copies are sampled there
// (a burst of 10, then one per 10 ms per session, the rest counted in the next
// record's suppressed_before) and queued without waking the log's writer
// (audit.Logger.Defer), so that auditing costs a latency-critical session no
// wake-up of another thread.
//
// A session that ends — closed, killed, or its client crashed mid-call — has its
// table closed, which revokes everything it held and runs each object's cleanup
// (buffers freed, streams drained and destroyed, modules unloaded), so its
// ledger and its tenant's memory usage return to where they were.
//
// If the device context is lost (a fatal fault), the driver stops: Lost is
// closed and the process exits, every session's connection breaks (clients see
// DeviceLost), and the manager starts a fresh driver.
//
// Memory (memory.go, shm.go): the memory manager quiesces a session by
// holding its scheduler queue (mem.Options.Quiesce: nothing more of the
// session is issued once its in-flight work completed); an evicted session's
// queue stays held until its pager (one goroutine per session that has work
// waiting) makes its window resident again. Evictions and swap-ins are
// audited (mem.evict, mem.swap-in, mem.resident) and counted per tenant in
// SessionStat. Shared memory segments live in a window of their owner
// tenant that belongs to no session.
//
// Latency-critical tenants (sched.go): with reserve_sms (Options.ReserveSMs)
// the streams of every tenant not of class high are created in a partition
// of the device's SMs (backend.Partitioner: CUDA green contexts), so that a
// high-class kernel finds SMs idle instead of waiting for best-effort blocks
// to end; sliced launches on such streams size their waves by the
// partition's SMs. A high-class session's rings poll for HighClassSpin on
// both sides, so that a service submitting every millisecond never waits
// for a sleeping thread (on a GPU its pollers keep their Go Ps while they
// yield the CPU, unless fewer than freePs would be left to the daemon's other
// goroutines: pollers.go); its synchronizing calls wait for its streams by
// polling fences (backend.Fencer: a word of host memory the GPU writes once
// the work before it completed) for as long, with no driver call until the
// fence is reached, then block in the driver if it was not (fence.go); its
// serving goroutine then completes the work's completion events itself,
// after the answer (sched.Queue.SetOwnCompletions, wire.Server.Answered),
// and hands them to the scheduler's waiters when its ring goes idle. Once it
// has answered a request that submitted work, with nothing else waiting on
// its ring and that work all issued, it enqueues the fences then and there
// (prefence), and a synchronize that comes later polls those if nothing
// overtook them on their streams (backend.LatestFencer). A launch with a
// synchronize waiting behind it on the ring (wire.Request.NextType), or nothing,
// gets its fence in its own issue, right behind the kernel and ahead of the
// scheduler's completion event, which the scheduler records as a marker
// (backend.MarkerRecorder) that does not overtake it: the GPU then writes
// the fence as soon as the kernel ends rather than after the event's
// timestamp (fenceLaunch). All of these are decided when the stream or ring
// is made.
//
// Completion on the client's side (completion.go): a high-class session on
// rings may ask for a completion page (v1.OpenCompletion), shared memory the
// driver maps for the device and seals so the client can only read it. Its
// streams write their fences into words of the page
// (backend.FenceWordSetter) and its guarded programs keep their fault
// records there; SynchronizeFences is answered, once the work is issued,
// with the words and numbers to wait for, and the client watches them
// itself, asking the driver (Synchronize) only if a fault record was written
// or the words are not reached within the fence poll. What the page does
// not cover, the driver waits for itself. With WatchLaunches (watch.go, the
// client's default) the driver also publishes, beside each stream's word,
// how many of its launches are issued with a fence behind them, and the
// client's synchronizes that follow nothing but launches need no request;
// every deferred error raises the page's count of calls, which sends the
// client's next synchronize here. The driver refuses pages with
// $GPUOS_SYNC_CLIENT=0.
//
// Environment, for measuring on a GPU (all optional; the defaults are what
// the benchmarks on the lent H100 chose): $GPUOS_LAUNCH_JOIN (1 to 8) fixes
// how many small launches a scheduler command carries; $GPUOS_RING_SPIN how
// long a ring is polled before its reader sleeps (package ring);
// $GPUOS_SWAP_PIN=register pins swap memory by registering it;
// $GPUOS_LATENCY_LOG names a file each session appends its launch commands'
// stage times to when it ends, with every command's times in a CSV beside
// it (latency.go); with it, $GPUOS_STALL_TRACE names a directory where a
// high-class session's stalls leave a flight recording of the Go execution
// trace; $GPUOS_GO_TRACE names a file for the Go execution trace of one
// window, $GPUOS_GO_TRACE_WINDOW ("AFTER+FOR", default 0s+1s) after the
// driver starts (gotrace.go), and $GPUOS_CPU_PROFILE with
// $GPUOS_CPU_PROFILE_WINDOW one for a CPU profile; $GPUOS_SCHED_EXPRESS=0 turns the scheduler's
// express lane off (sched.Options.NoExpress), $GPUOS_SCHED_HIGHFIRST=0 its high-class
// submitters' issuing first (sched.Options.NoHighFirst);
// $GPUOS_SCHED_GOSCHED=1 makes its poll loops yield the goroutine rather
// than the thread (sched.Options.Yield); $GPUOS_SCHED_SLICE sets the slice length
// (sched.Options.SliceTarget: a duration, or off); $GPUOS_SCHED_WAIT=block
// makes its completion waiters sleep (sched.Options.BlockingWait);
// $GPUOS_SCHED_LOWPOLL how often those of the low class query (a
// duration, or off: sched.Options.LowClassPoll), and $GPUOS_SCHED_LOWPACE=0
// makes them query that often from a kernel's start
// (sched.Options.NoLowClassPace); $GPUOS_SCHED_SPARE_KICKS=0 makes
// high-class submitters wake its background goroutine whenever other
// work is queued (sched.Options.NoSpareKicks); $GPUOS_SCHED_LOWSPIN=0
// keeps the goroutine that spins on fences for the low class's completions
// while a high-class session is open off on a GPU (Options.NoLowClassSpin),
// and =1 turns it on on the software GPU (sched.Options.LowClassSpin);
// $GPUOS_SCHED_EPISODE_HOLD sets how long, where that goroutine runs, the
// low class's work is held after the last of a service's slow launches
// (sched.Options.EpisodeHold; DefaultEpisodeHold unless set), and =off
// turns the holds off;
// $GPUOS_HEDGE=0 turns off hedged serving of high-class sessions and
// $GPUOS_HEDGE=always makes its helper watch always instead of on demand,
// and $GPUOS_HEDGE_DELAY sets how long a request waits unread before the
// helper serves it;
// $GPUOS_SYNC_FENCE=0 makes their synchronizing calls block in the driver
// instead of polling fences, and $GPUOS_SYNC_FENCE_SPIN sets how long
// they poll before yielding the CPU between polls, and $GPUOS_SYNC_OWN=0
// leaves their completion events to the scheduler's waiters, and
// $GPUOS_SYNC_PREFENCE=0 leaves their fences to their synchronizing calls,
// $GPUOS_SCHED_DEFER_KICK=0 makes their launches wake the scheduler's
// background goroutine at once rather than once they are answered
// (sched.Queue.SetDeferredKicks), $GPUOS_SCHED_FENCE_END=0 makes the
// scheduler record a completion event after each of their launches rather
// than end those it takes no timing from at their fence
// (sched.Command.EndFence),
// and $GPUOS_SYNC_LAUNCHFENCE=0 leaves a launch's to after its answer;
// $GPUOS_SCHED_HIGHSTART=0 records no start event before any high-class
// command, instead of one in 16 (sched.Options.NoHighClassStart);
// $GPUOS_SYNC_FENCE_PACED=1 (an experiment: it left the wake-ups as they
// were, and the service's tail within the noise, bench/RESULTS.md session
// 12) makes every other session wait by fences too, looking less and less
// often; $GPUOS_LOW_FENCE_WAIT=sync makes a low-class session's fence waits
// block in the event's synchronize, which polls inside the CUDA driver,
// instead of querying the event with naps between (lowfence.go);
// $GPUOS_HIGH_NICE serves each high-class session on a thread of that nice
// value; $GPUOS_HIGH_CPUS (a CPU list) on a thread that runs only on those
// CPUs, after gpuos serve and the driver process moved their other threads
// off them (KeepOffHighClassCPUs, nice_linux.go). The cuda backend reads
// $GPUOS_CUDA_SCHED (how the driver's synchronizing calls wait) and
// $GPUOS_CUDA_SLOW_LOG (driver calls slower than $GPUOS_CUDA_SLOW).
//
// Lock order: Driver.mu, then Session.mu. Neither is held while calling the
// backend, the scheduler, the memory manager or cap (whose cleanups call back
// into sessions). The memory manager's callbacks (Quiesce under a window's
// lock, OnSwap under its eviction lock) take only the scheduler's lock and
// the hooks' own sync.Map. The shm registry's lock is taken after the
// session's and before the memory manager's, and never held while revoking.
package driver
