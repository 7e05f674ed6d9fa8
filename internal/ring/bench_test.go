package ring

import (
	"sync"
	"testing"
	"time"
)

// The benchmarks move 64-byte messages, about a Launch frame. Each reports
// records/s and ns/record; "cross-process" runs the other end in a child
// process, as client and driver are.

const benchMsg = 64

func reportRate(b *testing.B, start time.Time) {
	el := time.Since(start)
	b.ReportMetric(float64(b.N)/el.Seconds(), "records/s")
	b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/record")
}

func BenchmarkOneWay(b *testing.B) {
	msg := make([]byte, benchMsg)
	b.Run("in-process", func(b *testing.B) {
		p, c := pair(b, 1<<20, Options{})
		done := make(chan struct{})
		go func() {
			var buf []byte
			for range b.N {
				buf, _ = c.Read(buf)
			}
			close(done)
		}()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			p.Write(msg)
		}
		<-done
		reportRate(b, start)
	})
	b.Run("cross-process", func(b *testing.B) {
		p, c, _, _ := crossProcess(b, "sink", 1<<20)
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			p.Write(msg)
		}
		p.Write([]byte(quitMsg))
		c.Read(nil) // the child has read everything
		reportRate(b, start)
	})
}

func BenchmarkRoundTrip(b *testing.B) {
	msg := make([]byte, benchMsg)
	b.Run("in-process", func(b *testing.B) {
		p1, c1 := pair(b, 1<<20, Options{})
		p2, c2 := pair(b, 1<<20, Options{})
		go func() {
			var buf []byte
			for {
				var err error
				if buf, err = c1.Read(buf); err != nil {
					return
				}
				p2.Write(buf)
			}
		}()
		b.ResetTimer()
		start := time.Now()
		var buf []byte
		for range b.N {
			p1.Write(msg)
			buf, _ = c2.Read(buf)
		}
		reportRate(b, start)
	})
	b.Run("cross-process", func(b *testing.B) {
		p, c, _, _ := crossProcess(b, "echo", 1<<20)
		b.ResetTimer()
		start := time.Now()
		var buf []byte
		for range b.N {
			p.Write(msg)
			buf, _ = c.Read(buf)
		}
		reportRate(b, start)
		p.Write([]byte(quitMsg))
	})
}

// BenchmarkParallelProducers has every goroutine write through one mutex, as
// a client's goroutines share its submission ring.
func BenchmarkParallelProducers(b *testing.B) {
	p, c := pair(b, 1<<20, Options{})
	done := make(chan struct{})
	go func() {
		var buf []byte
		for {
			var err error
			if buf, err = c.Read(buf); err != nil {
				close(done)
				return
			}
		}
	}()
	var mu sync.Mutex
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		msg := make([]byte, benchMsg)
		for pb.Next() {
			mu.Lock()
			p.Write(msg)
			mu.Unlock()
		}
	})
	reportRate(b, start)
	b.StopTimer()
	c.Close()
	<-done
}
