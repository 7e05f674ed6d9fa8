package sched

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
)

func holdScheduler(t *testing.T) (*Scheduler, backend.Device) {
	t.Helper()
	dev, err := sim.New(sim.Options{Memory: 64 << 20}).Open(0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		dev.Close()
	})
	return s, dev
}

// blocker is device work that stays in flight until opened: a stream
// callback that waits (the sim runs callbacks in stream order).
type blocker struct {
	gate   chan struct{}
	opened atomic.Bool
}

func newBlocker() *blocker { return &blocker{gate: make(chan struct{})} }

func (b *blocker) open() {
	b.opened.Store(true)
	close(b.gate)
}

func (b *blocker) command(st backend.Stream) *Command {
	return &Command{Kind: Compute, Stream: st, Issue: func() error {
		return st.Callback(func(error) { <-b.gate })
	}}
}

// Hold waits for the work in flight and keeps later work from being issued
// until it is released; holds nest.
func TestHold(t *testing.T) {
	s, dev := holdScheduler(t)
	q, err := s.NewQueue(QueueParams{Tenant: "t", Session: 1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := dev.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destroy()
	ctx := context.Background()

	b := newBlocker()
	if err := q.Submit(ctx, b.command(st)); err != nil {
		t.Fatal(err)
	}
	type held struct {
		release    func()
		err        error
		gateOpened bool
	}
	got := make(chan held, 1)
	go func() {
		rel, err := q.Hold(ctx)
		got <- held{rel, err, b.opened.Load()}
	}()
	time.Sleep(10 * time.Millisecond) // give a wrong Hold the chance to return early
	b.open()
	h := <-got
	if h.err != nil {
		t.Fatal(h.err)
	}
	if !h.gateOpened {
		t.Fatal("Hold returned while the queue's work was still in flight")
	}

	var issued atomic.Bool
	later := &Command{Kind: Compute, Stream: st, Issue: func() error {
		issued.Store(true)
		return nil
	}}
	if err := q.Submit(ctx, later); err != nil {
		t.Fatal(err)
	}
	rel2, err := q.Hold(ctx) // nested: nothing in flight, returns at once
	if err != nil {
		t.Fatal(err)
	}
	if on, n := q.Held(); !on || n != 1 {
		t.Errorf("Held() = %v, %d; want true, 1", on, n)
	}
	h.release()
	h.release() // idempotent
	time.Sleep(5 * time.Millisecond)
	if issued.Load() {
		t.Fatal("a command was issued while the queue was still held once")
	}
	rel2()
	if err := q.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if !issued.Load() {
		t.Fatal("the held command was not issued after the last release")
	}
	if on, _ := q.Held(); on {
		t.Error("queue still held after every release")
	}
}

// A Hold whose context ends while work is in flight fails and leaves the
// queue unheld.
func TestHoldCancel(t *testing.T) {
	s, dev := holdScheduler(t)
	q, err := s.NewQueue(QueueParams{Tenant: "t", Session: 1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := dev.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destroy()
	b := newBlocker()
	if err := q.Submit(context.Background(), b.command(st)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.Hold(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Hold with a cancelled context: %v, want canceled", err)
	}
	if on, _ := q.Held(); on {
		t.Error("a failed Hold left the queue held")
	}
	b.open()
	if err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
