package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The report's and the stages' inputs are files other processes wrote and
// may have left cut short (a daemon or client killed mid-run): whatever they
// hold, schedbench reports an error or a table, never a panic.

func writeFiles(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func FuzzStages(f *testing.F) {
	f.Add([]byte("launch_ns,synced_ns,gpu_start_ns,gpu_end_ns,sync_called_ns\n1000000,1060000,1010000,1030000,1004000\n2000000,2050000,2010000,2030000,2003000\n"),
		[]byte("\"7 (tenant hp, hp)\",1002000,1003000,1009000,1035000,1036000,false,1002500,1012000,1011000,1\n\"7 (tenant hp, hp)\",2001000,2002000,2008000,2035000,2036000,false\n"),
		[]byte("\"7 (tenant hp, hp)\",1005000,1006000,1040000,1\n\"7 (tenant hp, hp)\",2004000,2005000,2040000,1\n"),
		int64(time.Millisecond)) // the two requests fall in an alone and a loaded phase
	f.Add([]byte("1,2,3,4\n"), []byte("tenant hp,1,2\n"), []byte("tenant hp,1,2,3\n"), int64(0))
	f.Add([]byte("launch\n5,4,3,2,1\n"), []byte("\"tenant hp\n"), []byte(""), int64(-1))
	f.Fuzz(func(t *testing.T, trace, launches, syncs []byte, phase int64) {
		dir := writeFiles(t, map[string][]byte{
			"gpuos-hp-interleaved.trace.csv": trace, "latency.log.csv": launches, "latency.log.sync.csv": syncs,
		})
		if phase < 0 {
			phase = -phase
		}
		stages(dir, "interleaved", time.Duration(phase), time.Duration(phase)/20, io.Discard) // an error is fine; a panic is not
	})
}

func FuzzReport(f *testing.F) {
	f.Add([]byte(`{"mode":"hp","stack":"gpuos","samples":3,"p99_us":90,"phase_ms":500,"alone":{"mode":"hp","p99_us":80},"phases_us":[[1,2],[3],[4,5]]}`),
		[]byte("gpuos-interleaved-start cpu  1 0 2 3 4 0 5 6 0 0\ngpuos-interleaved-end cpu  9 0 9 9 9 0 9 9 0 0\n"),
		[]byte("summary cpus=16 seconds=4 gaps_over_1ms=8 lost_ms=212.5 max_us=3394\n"),
		[]byte("boot=8f80675a-0000\ncpu=x\nkernel=6.1\n"))
	f.Add([]byte(`{"mode":"shares","tenants":[{"tenant":"a","weight":0,"share":0.5,"target":0}]}`),
		[]byte("x cpu 1\n"), []byte("summary cpus=0 seconds=0"), []byte("boot=-"))
	f.Fuzz(func(t *testing.T, result, cpustat, hiccup, host []byte) {
		files := map[string][]byte{"cpustat.txt": cpustat, "hiccup-before.txt": hiccup, "host.txt": host}
		for _, name := range []string{"gpuos-hp-interleaved", "native-hp-interleaved", "gpuos-hp-alone", "gpuos-shares-fair", "gpuos-be-alone-1"} {
			files[name+".json"] = result
		}
		report(writeFiles(t, files), io.Discard) // failed checks are fine; a panic is not
	})
}
