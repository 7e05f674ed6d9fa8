package sched_test

import (
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/sched"
)

// TestExpressLane: while the dispatching goroutine is stuck in a slow
// backend call for a best-effort tenant (a driver call that blocks for
// milliseconds, as cuEventRecord did on the H100 in run 22), a high-class
// command is issued at once by its submitter under the policies that let it
// run beside other work (priority, fifo); a best-effort command submitted
// meanwhile waits for the stuck call. Under the share policies every
// kernel takes its turn, which only the token holder can give, so the
// service's command waits too and is issued once the call returns, as it
// does with the lane turned off (Options.NoExpress).
func TestExpressLane(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		off          bool // Options.NoExpress
		express      bool
	}{
		{"priority", "priority", false, true},
		{"fifo", "fifo", false, true},
		{"fair", "fair", false, false},
		{"band", "band", false, false},
		{"priority/off", "priority", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSched(t, sched.Options{Device: &fakeDevice{}, NoExpress: tc.off})
			if err := s.Use(tc.policy); err != nil {
				t.Fatal(err)
			}
			for name, class := range map[string]sched.Class{"be": sched.ClassLow, "service": sched.ClassHigh} {
				if err := s.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
					t.Fatal(err)
				}
			}
			be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 8})
			be2 := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 2, Depth: 8})
			svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 3, Depth: 8})
			ctx := tctx(t)
			stuck, release := make(chan struct{}), make(chan struct{})
			released := false
			unstick := func() {
				if !released {
					released = true
					close(release)
				}
			}
			defer unstick()
			beSt, svcSt := newFakeStream(true), newFakeStream(true)
			// Tracked (as a best-effort kernel of 20 µs or more is): an open
			// batch of another stream's untracked commands keeps the
			// express lane out, as its end event would time the service too.
			slow := &sched.Command{Kind: sched.Compute, Stream: beSt, Flags: sched.Sync, Issue: func() error {
				close(stuck)
				<-release
				return beSt.op()
			}}
			go be.Submit(ctx, slow) // its submitter dispatches, and blocks in Issue
			<-stuck

			issued := make(chan struct{})
			c := &sched.Command{Kind: sched.Compute, Stream: svcSt, Issue: func() error { close(issued); return svcSt.op() }}
			if err := svc.Submit(ctx, c); err != nil {
				t.Fatal(err)
			}
			other := make(chan struct{})
			if err := be2.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: beSt, Issue: func() error { close(other); return beSt.op() }}); err != nil {
				t.Fatal(err)
			}
			wait := 10 * time.Second
			if !tc.express {
				wait = 50 * time.Millisecond
			}
			select {
			case <-issued:
				if !tc.express {
					t.Fatal("the service's command was issued while the token holder was stuck")
				}
			case <-time.After(wait):
				if tc.express {
					t.Fatalf("the service's command waited for the stuck dispatch\n%s", s.Dump())
				}
			}
			select {
			case <-other:
				t.Error("a best-effort command went ahead of the stuck dispatch")
			case <-time.After(50 * time.Millisecond):
			}
			unstick()
			for _, ch := range []chan struct{}{issued, other} {
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					t.Fatalf("a command was not issued once the stuck call returned\n%s", s.Dump())
				}
			}
			if got := s.Expressed(); (got > 0) != tc.express {
				t.Errorf("express lane issued %d commands; want some: %v", got, tc.express)
			}
			if c.Expressed != tc.express || slow.Expressed {
				t.Errorf("Command.Expressed: the service's %v, the stuck one's %v; want %v, false", c.Expressed, slow.Expressed, tc.express)
			}
		})
	}
}
