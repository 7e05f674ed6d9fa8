package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

func init() {
	register(&command{name: "run", summary: "run a CUDA program through gpuos", run: runProgram})
}

// shimName is the file the CUDA runtime and programs open.
const shimName = "libcuda.so.1"

// Errors returned by gpuos run.
var (
	errNoShim = errors.New("gpuos libcuda.so.1 not found")
)

// runProgram runs CMD with gpuos's libcuda.so.1 first on LD_LIBRARY_PATH and
// the session's coordinates in its environment, and exits with its status.
func runProgram(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	tenant := fs.String("tenant", "", "tenant to act as (default $GPUOS_TENANT, else the first that admits you)")
	socket := fs.String("socket", "", "the daemon's socket (default $GPUOS_SOCKET, else the default path)")
	shimDir := fs.String("shim", "", "directory holding gpuos's libcuda.so.1 (default: beside the gpuos binary, or ../lib/gpuos)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gpuos run [--tenant T] [--socket PATH] [--shim DIR] -- CMD [ARGS...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	cmdline := fs.Args()
	if len(cmdline) == 0 {
		fs.Usage()
		return errUsage
	}
	dir, err := findShim(*shimDir)
	if err != nil {
		return err
	}
	cmd := exec.Command(cmdline[0], cmdline[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = runEnv(os.Environ(), dir, *socket, *tenant)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmdline[0], err)
	}
	// The program gets the signals gpuos gets; gpuos waits for it either way.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			cmd.Process.Signal(s)
		case <-ctx.Done():
			cmd.Process.Signal(syscall.SIGTERM)
			ctx = context.Background()
		case err := <-done:
			return exitStatus(err)
		}
	}
}

// exitStatus turns the program's end into gpuos's: its exit status, or 128
// plus the signal that killed it, as a shell reports it.
func exitStatus(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitCode(128 + int(ws.Signal()))
	}
	return exitCode(ee.ExitCode())
}

// findShim returns the directory that holds libcuda.so.1: dir if given, else
// the gpuos binary's directory or ../lib/gpuos beside it.
func findShim(dir string) (string, error) {
	if dir != "" {
		if !isFile(filepath.Join(dir, shimName)) {
			return "", fmt.Errorf("%w in %s (--shim)", errNoShim, dir)
		}
		return filepath.Abs(dir)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate the gpuos binary: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	bin := filepath.Dir(exe)
	tried := []string{bin, filepath.Join(bin, "..", "lib", "gpuos")}
	for _, d := range tried {
		if isFile(filepath.Join(d, shimName)) {
			return filepath.Abs(d)
		}
	}
	return "", fmt.Errorf("%w beside the gpuos binary (looked in %s); build it with `go build -buildmode=c-shared -o %s ./cmd/libcuda` there, or pass --shim DIR",
		errNoShim, strings.Join(tried, " and "), filepath.Join(bin, shimName))
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// runEnv is the program's environment: the shim directory first on
// LD_LIBRARY_PATH, and GPUOS_SOCKET and GPUOS_TENANT set from the flags when
// given (GPUOS_TOKEN and the rest pass through).
func runEnv(env []string, shimDir, socket, tenant string) []string {
	out := make([]string, 0, len(env)+3)
	ld := shimDir
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "LD_LIBRARY_PATH":
			if v != "" {
				ld = shimDir + ":" + v
			}
			continue
		case k == "GPUOS_SOCKET" && socket != "", k == "GPUOS_TENANT" && tenant != "":
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "LD_LIBRARY_PATH="+ld)
	if socket != "" {
		if abs, err := filepath.Abs(socket); err == nil {
			socket = abs
		}
		out = append(out, "GPUOS_SOCKET="+socket)
	}
	if tenant != "" {
		out = append(out, "GPUOS_TENANT="+tenant)
	}
	return out
}
