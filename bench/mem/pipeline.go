package membench

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/gpuos/gpuos/client"
)

// Mode is how a Pipeline hands data from its first stage to its second.
type Mode int

const (
	// ThroughSegment: the producer writes into a shared segment that the
	// consumer has attached; the handoff is a synchronization, no copy.
	ThroughSegment Mode = iota
	// ThroughHost: the producer writes into its own buffer, copies it to the
	// host, and the consumer copies it into its own buffer.
	ThroughHost
)

func (m Mode) String() string {
	if m == ThroughSegment {
		return "segment"
	}
	return "host"
}

// Pipeline is a two-stage pipeline between two tenants' sessions: the
// producer fills n bytes (data[i] = item + i), the consumer checks them.
type Pipeline struct {
	a, b       *client.Session
	ka, kb     *Kernels
	seg, segB  *client.Segment
	ma, mb     *client.Buffer // the segment in a's and b's windows
	bufA, bufB *client.Buffer // each side's own buffer, for ThroughHost
	errs       *client.Buffer // b's error counter
	host       []byte
	n          uint64
}

var pipeSeq = uint64(time.Now().UnixNano())

// NewPipeline sets up a pipeline of n bytes (a multiple of 4) from a to b,
// whose tenant is tenantB: a segment of a's tenant that b may read, and a
// buffer on each side.
func NewPipeline(ctx context.Context, a, b *client.Session, tenantB string, n uint64) (p *Pipeline, err error) {
	if n == 0 || n%4 != 0 {
		return nil, fmt.Errorf("pipeline: %d bytes is not a positive multiple of 4", n)
	}
	p = &Pipeline{a: a, b: b, n: n, host: make([]byte, n)}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if p.ka, err = Load(ctx, a); err != nil {
		return nil, err
	}
	if p.kb, err = Load(ctx, b); err != nil {
		return nil, err
	}
	pipeSeq++
	name := fmt.Sprint("membench-pipe-", pipeSeq)
	if p.seg, err = a.ShmGet(ctx, client.Shm(name), n, client.ShmCreate|client.ShmExclusive); err != nil {
		return nil, err
	}
	if a.Tenant() != b.Tenant() {
		if err = p.seg.Allow(ctx, tenantB, client.BufferRead); err != nil {
			return nil, err
		}
	}
	if p.ma, err = p.seg.Attach(ctx, false); err != nil {
		return nil, err
	}
	if p.segB, err = b.ShmGet(ctx, client.ShmKey{Owner: a.Tenant(), Name: name}, 0, 0); err != nil {
		return nil, err
	}
	if p.mb, err = p.segB.Attach(ctx, true); err != nil {
		return nil, err
	}
	if p.bufA, err = a.CreateBuffer(ctx, n); err != nil {
		return nil, err
	}
	if p.bufB, err = b.CreateBuffer(ctx, n); err != nil {
		return nil, err
	}
	if p.errs, err = b.CreateBuffer(ctx, 4); err != nil {
		return nil, err
	}
	return p, nil
}

// Run passes items through the pipeline, one at a time, and returns the
// time it took. Every item is checked by the consumer's kernel; a wrong word
// is an error.
func (p *Pipeline) Run(ctx context.Context, mode Mode, items int) (time.Duration, error) {
	if err := p.b.Memset(p.errs.At(0), 0, 4, 1, nil); err != nil {
		return 0, err
	}
	if err := p.b.Synchronize(ctx); err != nil {
		return 0, err
	}
	lc := client.LaunchConfig{Grid: client.Dim3{X: 1024}, Block: client.Dim3{X: 256}}
	words := p.n / 4
	start := time.Now()
	for it := 0; it < items; it++ {
		base := uint32(it) * 0x10000
		src, dst := p.ma, p.mb
		if mode == ThroughHost {
			src, dst = p.bufA, p.bufB
		}
		if err := p.a.Launch(p.ka.Fill, lc, src, words, base); err != nil {
			return 0, err
		}
		if mode == ThroughHost {
			if err := p.a.CopyFromDevice(ctx, p.host, src.At(0), nil); err != nil {
				return 0, err
			}
			if err := p.b.CopyToDevice(dst.At(0), p.host, nil); err != nil {
				return 0, err
			}
		} else if err := p.a.Synchronize(ctx); err != nil {
			return 0, err
		}
		if err := p.b.Launch(p.kb.Check, lc, dst, words, base, p.errs); err != nil {
			return 0, err
		}
		if err := p.b.Synchronize(ctx); err != nil {
			return 0, err
		}
	}
	d := time.Since(start)
	var cnt [4]byte
	if err := p.errs.Read(ctx, 0, cnt[:]); err != nil {
		return 0, err
	}
	if bad := binary.LittleEndian.Uint32(cnt[:]); bad != 0 {
		return 0, fmt.Errorf("pipeline through %v: the consumer found %d wrong words", mode, bad)
	}
	return d, nil
}

// Close releases what the pipeline made.
func (p *Pipeline) Close() {
	for _, b := range []*client.Buffer{p.mb, p.ma, p.bufA, p.bufB, p.errs} {
		if b != nil {
			b.Close()
		}
	}
	if p.segB != nil {
		p.segB.Close()
	}
	if p.seg != nil {
		p.seg.Remove(context.Background())
		p.seg.Close()
	}
	for _, k := range []*Kernels{p.ka, p.kb} {
		if k != nil {
			k.Prog.Close()
		}
	}
}
