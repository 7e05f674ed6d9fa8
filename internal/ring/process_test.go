package ring

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	childEnv = "GPUOS_RING_TEST_CHILD"
	quitMsg  = "quit" // no message() is 4 bytes long
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// child is the other process of the cross-process tests. Descriptor 3 holds
// two rings of the size in GPUOS_RING_TEST_SIZE: "in" (parent to child) at the
// start, "out" after it.
//
//	echo:  write back every message until "quit"
//	sink:  read until "quit", then write it back
//	flood: say "ready" on stdout, then write messages without end
func child(mode string) int {
	size, _ := strconv.Atoi(os.Getenv("GPUOS_RING_TEST_SIZE"))
	shm, err := Open(3, 2*Bytes(size), true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	mem := shm.Bytes()
	in, err := NewConsumer(mem, size, testMax, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	out, err := NewProducer(mem[Bytes(size):], size, testMax, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	var buf []byte
	switch mode {
	case "echo", "sink":
		for {
			buf, err = in.Read(buf)
			if err != nil {
				fmt.Fprintln(os.Stderr, "child read:", err)
				return 1
			}
			quit := string(buf) == quitMsg
			if mode == "echo" || quit {
				if err := out.Write(buf); err != nil {
					fmt.Fprintln(os.Stderr, "child write:", err)
					return 1
				}
			}
			if quit {
				return 0
			}
		}
	case "flood":
		fmt.Println("ready")
		for i := 0; ; i++ {
			if err := out.Write(message(i, size)); err != nil {
				return 1
			}
		}
	}
	return 2
}

// crossProcess starts the test binary as the child in mode, sharing two rings
// of size bytes, and returns this side's ends.
func crossProcess(t testing.TB, mode string, size int) (*Producer, *Consumer, *exec.Cmd, *bufio.Reader) {
	t.Helper()
	shm, err := Create("ring-xproc", 2*Bytes(size), true)
	if err != nil {
		t.Fatal(err)
	}
	mem := shm.Bytes()
	Init(mem, size)
	Init(mem[Bytes(size):], size)
	p, err := NewProducer(mem, size, testMax, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConsumer(mem[Bytes(size):], size, testMax, Options{})
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "GPUOS_RING_TEST_SIZE="+strconv.Itoa(size))
	cmd.ExtraFiles = []*os.File{os.NewFile(uintptr(shm.TakeFD()), "rings")}
	cmd.Stderr = os.Stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles[0].Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		p.Close()
		c.Close()
		shm.Close()
	})
	return p, c, cmd, bufio.NewReader(stdout)
}

func TestCrossProcessEcho(t *testing.T) {
	const size = 16 << 10
	p, c, cmd, _ := crossProcess(t, "echo", size)
	const n = 300
	go func() {
		for i := 1; i <= n; i++ {
			if err := p.Write(message(i, size)); err != nil {
				return
			}
		}
		p.Write([]byte(quitMsg))
	}()
	for i := 1; i <= n; i++ {
		m, err := c.Read(nil)
		if err != nil {
			t.Fatalf("echo %d: %v", i, err)
		}
		if want := message(i, size); !bytes.Equal(m, want) {
			t.Fatalf("echo %d: %d bytes, want %d", i, len(m), len(want))
		}
	}
	if m, err := c.Read(nil); err != nil || string(m) != quitMsg {
		t.Fatalf("final echo: %x, %v", m, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// A producer killed at any point leaves only whole messages behind: after the
// owner shuts the ring down (it saw the peer's socket close), the consumer
// reads every message the producer finished, each intact, and then the
// shutdown error; never ErrCorrupt.
func TestCrossProcessKilledMidWrite(t *testing.T) {
	const size = 16 << 10
	_, c, cmd, stdout := crossProcess(t, "flood", size)
	if line, err := stdout.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	var buf []byte
	var err error
	i := 0
	for ; i < 200; i++ { // let it get going
		if buf, err = c.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	c.Shutdown(io.EOF)
	for ; ; i++ {
		buf, err = c.Read(buf)
		if err != nil {
			break
		}
		if want := message(i, size); !bytes.Equal(buf, want) {
			t.Fatalf("message %d after the kill: %d bytes, want %d", i, len(buf), len(want))
		}
	}
	if err != io.EOF {
		t.Fatalf("end of a killed producer's ring: %v, want io.EOF", err)
	}
	if errors.Is(err, ErrCorrupt) {
		t.Fatal("killed producer read as corruption")
	}
	// Its descriptor is gone with it; the mapping stays valid here.
	if _, err := unix.Getpgid(cmd.Process.Pid); err == nil {
		t.Log("child still has a process group (zombie reaped late)")
	}
}
