package sim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

func TestPartitionReserve(t *testing.T) {
	for _, tt := range []struct {
		sms        int
		concurrent bool
		reserve    int
		wantErr    error // nil: want the partition below
		wantRes    int
		wantSMs    int
	}{
		{sms: 132, concurrent: false, reserve: 8, wantErr: backend.ErrUnsupported},
		{sms: 132, concurrent: true, reserve: 0, wantErr: backend.ErrInvalidArgument},
		{sms: 132, concurrent: true, reserve: -1, wantErr: backend.ErrInvalidArgument},
		{sms: 132, concurrent: true, reserve: 132, wantErr: backend.ErrInvalidArgument},
		{sms: 132, concurrent: true, reserve: 1 << 40, wantErr: backend.ErrInvalidArgument},
		{sms: 132, concurrent: true, reserve: 129, wantErr: backend.ErrInvalidArgument}, // rounds to 136
		{sms: 132, concurrent: true, reserve: 1, wantRes: 8, wantSMs: 124},
		{sms: 132, concurrent: true, reserve: 8, wantRes: 8, wantSMs: 124},
		{sms: 132, concurrent: true, reserve: 9, wantRes: 16, wantSMs: 116},
		{sms: 132, concurrent: true, reserve: 128, wantRes: 128, wantSMs: 4},
		// A small device's granularity is half its SMs.
		{sms: 4, concurrent: true, reserve: 1, wantRes: 2, wantSMs: 2},
		{sms: 4, concurrent: true, reserve: 3, wantErr: backend.ErrInvalidArgument},
		{sms: 10, concurrent: true, reserve: 3, wantRes: 5, wantSMs: 5},
		{sms: 1, concurrent: true, reserve: 1, wantErr: backend.ErrInvalidArgument},
	} {
		name := fmt.Sprintf("sms=%d,concurrent=%v,reserve=%d", tt.sms, tt.concurrent, tt.reserve)
		d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: tt.sms, ConcurrentKernels: tt.concurrent})
		p, err := d.Partition(tt.reserve)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%s: have %v, want an error matching %v", name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.Reserved() != tt.wantRes || p.SMs() != tt.wantSMs {
			t.Errorf("%s: have reserved %d, SMs %d; want %d, %d", name, p.Reserved(), p.SMs(), tt.wantRes, tt.wantSMs)
		}
		must(t, p.Close())
	}
}

func TestPartitionLifecycle(t *testing.T) {
	d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: 16, ConcurrentKernels: true})
	p, err := d.Partition(8)
	must(t, err)
	s, err := p.NewStream(-100)
	must(t, err)
	if got := s.(*Stream).Priority(); got != GreatestStreamPriority {
		t.Errorf("priority = %d, want it clamped to %d", got, GreatestStreamPriority)
	}
	if err := p.Close(); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("close with a live stream: have %v, want an error matching backend.ErrInvalidArgument", err)
	}
	must(t, s.Destroy())
	must(t, p.Close())
	if err := p.Close(); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("second close: have %v, want an error matching ErrInvalidHandle", err)
	}
	if _, err := p.NewStream(0); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("new stream after close: have %v, want an error matching ErrInvalidHandle", err)
	}

	// Partitions are independent: closing one leaves the other usable.
	a, err := d.Partition(1)
	must(t, err)
	b, err := d.Partition(1)
	must(t, err)
	must(t, a.Close())
	sb, err := b.NewStream(0)
	must(t, err)
	must(t, sb.Destroy())
	must(t, b.Close())

	must(t, d.Close())
	if _, err := d.Partition(8); !errors.Is(err, ErrClosed) {
		t.Errorf("partition of a closed device: have %v, want an error matching ErrClosed", err)
	}
}

// The point of partitions: best-effort streams confined to a partition fill
// its SMs with long kernels, and a kernel of a stream outside it starts on a
// reserved SM as soon as its launch overhead has passed. Without the
// partition the same kernel waits for best-effort blocks to end.
func TestPartitionKeepsSMsFree(t *testing.T) {
	for _, partitioned := range []bool{true, false} {
		d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: 132, Cost: exactCost, ConcurrentKernels: true})
		_, fns := loadTest(t, d)
		var got []Placement
		must(t, d.TracePlacements(func(p Placement) { got = append(got, p) }))
		newBestEffort := func() backend.Stream { return newStream(t, d) }
		if partitioned {
			part, err := d.Partition(8)
			must(t, err)
			newBestEffort = func() backend.Stream {
				s, err := part.NewStream(LeastStreamPriority)
				must(t, err)
				t.Cleanup(func() { s.Destroy() })
				return s
			}
		}
		be := []backend.Stream{newBestEffort(), newBestEffort()}
		urgent, err := d.NewStream(GreatestStreamPriority)
		must(t, err)
		t.Cleanup(func() { urgent.Destroy() })
		// 4 waves of 1000 ns blocks on the whole device, each.
		for _, s := range be {
			must(t, s.Launch(fns["work"], grid1(4*132, 32), workParams(4*132*1000, 0)))
		}
		must(t, urgent.Launch(fns["work"], grid1(1, 32), workParams(100, 0)))
		must(t, d.Synchronize())
		if len(got) != 3 {
			t.Fatalf("partitioned=%v: %d placements, want 3", partitioned, len(got))
		}
		u, launch := got[2], exactCost.LaunchOverhead
		if u.Blocks != 1 {
			t.Fatalf("partitioned=%v: last placement %+v is not the urgent kernel", partitioned, u)
		}
		if partitioned {
			if want := u.Ready + launch; u.Start != want || u.End != want+100 {
				t.Errorf("urgent kernel beside a partition: have [%v, %v), want [%v, %v)", u.Start, u.End, want, want+100)
			}
			continue
		}
		if first := min(got[0].End, got[1].End); u.Start <= u.Ready+launch || u.Start < first {
			t.Errorf("urgent kernel without a partition: have start %v, want it after the best-effort blocks (%v)", u.Start, first)
		}
	}
}

// A partition's work never lands on a reserved SM and takes its time on the
// partition's SMs; a stream outside it uses every SM.
func TestPartitionPlacement(t *testing.T) {
	const (
		sms     = 132
		reserve = 8
		partSMs = sms - reserve
	)
	all := make([]int, sms)
	for i := range all {
		all[i] = i
	}
	for _, tt := range []struct {
		name        string
		inPartition bool
		enqueue     func(s backend.Stream, fns map[string]backend.Function, p backend.DevicePtr) error
		want        Placement // Function not compared
		wantSMs     []int     // the SMs that ran a block
	}{
		{
			name:        "3 waves in the partition",
			inPartition: true,
			enqueue: func(s backend.Stream, fns map[string]backend.Function, _ backend.DevicePtr) error {
				return s.Launch(fns["work"], grid1(3*partSMs, 32), workParams(3*partSMs*1000, 0))
			},
			want:    Placement{Blocks: 3 * partSMs, Start: 1000, End: 4000},
			wantSMs: all[reserve:],
		},
		{
			// The same work takes sms/partSMs as long in the partition.
			name:        "many blocks in the partition",
			inPartition: true,
			enqueue: func(s backend.Stream, fns map[string]backend.Function, _ backend.DevicePtr) error {
				return s.Launch(fns["work"], grid1(sms*partSMs, 32), workParams(sms*partSMs*1000, 0))
			},
			want:    Placement{Blocks: sms * partSMs, Start: 1000, End: 1000 + sms*1000},
			wantSMs: all[reserve:],
		},
		{
			name:        "many blocks outside",
			inPartition: false,
			enqueue: func(s backend.Stream, fns map[string]backend.Function, _ backend.DevicePtr) error {
				return s.Launch(fns["work"], grid1(sms*partSMs, 32), workParams(sms*partSMs*1000, 0))
			},
			want:    Placement{Blocks: sms * partSMs, Start: 1000, End: 1000 + partSMs*1000},
			wantSMs: all,
		},
		{
			// 100 bytes at 1 GB/s after the 100 ns copy overhead, a block
			// per SM of the partition.
			name:        "memset in the partition",
			inPartition: true,
			enqueue: func(s backend.Stream, _ map[string]backend.Function, p backend.DevicePtr) error {
				return s.Memset(p, 0, 4, 25)
			},
			want:    Placement{Blocks: partSMs, Start: 100, End: 200},
			wantSMs: all[reserve:],
		},
		{
			name:        "copy in the partition",
			inPartition: true,
			enqueue: func(s backend.Stream, _ map[string]backend.Function, p backend.DevicePtr) error {
				return s.CopyDtoD(p+4096, p, 100)
			},
			want:    Placement{Blocks: partSMs, Start: 100, End: 200},
			wantSMs: all[reserve:],
		},
	} {
		d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: sms, Cost: exactCost, ConcurrentKernels: true})
		_, fns := loadTest(t, d)
		mem := alloc(t, d, G)
		part, err := d.Partition(reserve)
		must(t, err)
		var got []Placement
		must(t, d.TracePlacements(func(p Placement) { got = append(got, p) }))
		s, err := d.NewStream(0)
		if tt.inPartition {
			s, err = part.NewStream(0)
		}
		must(t, err)
		must(t, tt.enqueue(s, fns, mem))
		must(t, s.Synchronize())
		if len(got) != 1 {
			t.Fatalf("%s: %d placements, want 1", tt.name, len(got))
		}
		have := got[0]
		have.Function = nil
		if have != tt.want {
			t.Errorf("%s: placement\n have %+v\n want %+v", tt.name, have, tt.want)
		}
		if have := busySMs(d); fmt.Sprint(have) != fmt.Sprint(tt.wantSMs) {
			t.Errorf("%s: blocks ran on SMs %v, want %v", tt.name, have, tt.wantSMs)
		}
		must(t, s.Destroy())
		must(t, part.Close())
	}
}

// busySMs lists the SMs that hold a block placed since the last placement
// began (place forgets intervals only when it starts).
func busySMs(d *Device) []int {
	d.sms.mu.Lock()
	defer d.sms.mu.Unlock()
	var sms []int
	for i, b := range d.sms.busy {
		if len(b) > 0 {
			sms = append(sms, i)
		}
	}
	return sms
}

// A partition's times follow the wave model: a
// partition kernel of partSMs*k blocks takes k waves, whatever k.
func TestPartitionWaves(t *testing.T) {
	d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: 4, Cost: exactCost, ConcurrentKernels: true})
	_, fns := loadTest(t, d)
	part, err := d.Partition(1) // SMs 2 and 3
	must(t, err)
	s, err := part.NewStream(0)
	must(t, err)
	t.Cleanup(func() { s.Destroy() })
	var got []time.Duration
	must(t, d.TracePlacements(func(p Placement) { got = append(got, p.End-p.Start) }))
	for k := uint32(1); k <= 4; k++ {
		must(t, s.Launch(fns["work"], grid1(2*k, 32), workParams(uint64(2*k)*500, 0)))
	}
	must(t, s.Synchronize())
	// Blocks of 500 ns: k waves each.
	if want := []time.Duration{500, 1000, 1500, 2000}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("kernel spans = %v, want %v", got, want)
	}
}
