package cuda

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

// Partitions on the fake driver (132 SMs, split in multiples of 8 as sm_90's):
// the reserve is rounded up, bad reserves are refused, a partition's streams
// run the device's kernels, and a partition closes only once its streams are
// gone.
func TestFakePartition(t *testing.T) {
	_, d := openFakeDevice(t)
	for _, c := range []struct {
		reserve           int
		wantSMs, wantLeft int
		wantErr           error
	}{
		{reserve: 1, wantSMs: 124, wantLeft: 8},
		{reserve: 8, wantSMs: 124, wantLeft: 8},
		{reserve: 9, wantSMs: 116, wantLeft: 16},
		{reserve: 0, wantErr: backend.ErrInvalidArgument},
		{reserve: -1, wantErr: backend.ErrInvalidArgument},
		{reserve: 132, wantErr: backend.ErrInvalidArgument},
	} {
		p, err := d.Partition(c.reserve)
		if c.wantErr != nil {
			if !errors.Is(err, c.wantErr) {
				t.Errorf("Partition(%d) = %v, want %v", c.reserve, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Partition(%d): %v", c.reserve, err)
		}
		if p.SMs() != c.wantSMs || p.Reserved() != c.wantLeft {
			t.Errorf("Partition(%d): %d SMs, %d reserved; want %d, %d", c.reserve, p.SMs(), p.Reserved(), c.wantSMs, c.wantLeft)
		}
		must(t, p.Close())
	}

	p, err := d.Partition(8)
	must(t, err)
	st, err := p.NewStream(0)
	must(t, err)
	m, err := d.LoadModule([]byte(fakePTX))
	must(t, err)
	f, err := m.Function("poke")
	must(t, err)
	buf := allocFake(t, d, 64)
	params := make([]byte, 8)
	binary.LittleEndian.PutUint64(params, uint64(buf))
	must(t, st.Launch(f, backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}, params))
	got := make([]byte, 1)
	must(t, st.CopyDtoH(got, buf))
	if got[0] == 0 {
		t.Errorf("a kernel on the partition's stream did not run")
	}
	if err := p.Close(); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("Close with a live stream = %v, want ErrInvalidArgument", err)
	}
	must(t, st.Destroy())
	must(t, p.Close())
	if _, err := p.NewStream(0); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("NewStream after Close = %v, want ErrInvalidHandle", err)
	}
	if err := p.Close(); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("second Close = %v, want ErrInvalidHandle", err)
	}

	// Closing the device ends a partition still open, and its streams.
	p2, err := d.Partition(16)
	must(t, err)
	if _, err := p2.NewStream(0); err != nil {
		t.Fatal(err)
	}
	must(t, d.Close())
	if _, err := p2.NewStream(0); err == nil {
		t.Errorf("NewStream on a closed device's partition succeeded")
	}
}

// smidPTX writes each block's SM id to out[blockIdx.x].
const smidPTX = `.version 7.8
.target sm_80
.address_size 64
.visible .entry smid(.param .u64 out)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, %smid;
	mov.u32 %r2, %ctaid.x;
	mul.wide.u32 %rd2, %r2, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;
	ret;
}
`

// On the GPU: a partition's kernels run on at most its SMs, a stream of the
// whole device uses more, and work on the two kinds of stream orders through
// events — with the device's memory and a module loaded in its context.
func TestGPUPartition(t *testing.T) {
	_, d := gpuDevice(t)
	p, err := d.Partition(8)
	if errors.Is(err, backend.ErrUnsupported) {
		t.Skipf("the driver has no green contexts: %v", err)
	}
	must(t, err)
	defer p.Close()
	n := d.Info().SMCount
	t.Logf("partition: %d SMs of %d, %d reserved", p.SMs(), n, p.Reserved())
	if p.Reserved() < 8 || p.SMs()+p.Reserved() != n {
		t.Fatalf("partition of %d SMs with %d reserved on a %d-SM device", p.SMs(), p.Reserved(), n)
	}
	m, err := d.LoadModule([]byte(smidPTX))
	must(t, err)
	defer m.Unload()
	f, err := m.Function("smid")
	must(t, err)
	const blocks = 8192
	out, err := d.Reserve(d.Granularity(), d.Granularity())
	must(t, err)
	ch, err := d.CreateChunk(d.Granularity())
	must(t, err)
	must(t, d.Map(out, d.Granularity(), ch, 0))
	must(t, d.SetAccess(out, d.Granularity()))
	defer func() { d.Unmap(out, d.Granularity()); ch.Release(); d.Release(out, d.Granularity()) }()
	distinct := func(st backend.Stream) int {
		params := make([]byte, 8)
		binary.LittleEndian.PutUint64(params, uint64(out))
		must(t, st.Memset(out, 0xffffffff, 4, blocks))
		must(t, st.Launch(f, backend.LaunchConfig{Grid: [3]uint32{blocks, 1, 1}, Block: [3]uint32{32, 1, 1}}, params))
		host := make([]byte, 4*blocks)
		must(t, st.CopyDtoH(host, out))
		seen := map[uint32]bool{}
		for i := range blocks {
			s := binary.LittleEndian.Uint32(host[4*i:])
			if s >= uint32(n) {
				t.Fatalf("block %d: SM id %#x: the kernel did not run", i, s)
			}
			seen[s] = true
		}
		return len(seen)
	}
	ps, err := p.NewStream(0)
	must(t, err)
	defer ps.Destroy()
	ws, err := d.NewStream(0)
	must(t, err)
	defer ws.Destroy()
	inPart, whole := distinct(ps), distinct(ws)
	t.Logf("distinct SMs: partition stream %d, whole-device stream %d", inPart, whole)
	if inPart > p.SMs() {
		t.Errorf("the partition's kernel ran on %d SMs, more than its %d", inPart, p.SMs())
	}
	if whole <= p.SMs() {
		t.Errorf("the whole-device kernel ran on %d SMs, no more than the partition's %d", whole, p.SMs())
	}
	// Ordering across the two: a memset on the partition's stream, then a
	// copy on the other stream after an event.
	ev, err := d.NewEvent(backend.EventDisableTiming)
	must(t, err)
	defer ev.Destroy()
	must(t, ps.Memset(out, 0x5a5a5a5a, 4, blocks))
	must(t, ps.Record(ev))
	must(t, ws.WaitEvent(ev))
	host := make([]byte, 4*blocks)
	must(t, ws.CopyDtoH(host, out))
	for i := range blocks {
		if v := binary.LittleEndian.Uint32(host[4*i:]); v != 0x5a5a5a5a {
			t.Fatalf("word %d = %#x after the event: the streams did not order", i, v)
		}
	}
}
