// Command gpuos is the gpuos daemon, its driver processes and its command line.
//
//	gpuos serve    run the daemon (the manager, which starts one driver per device)
//	gpuos run      run a CUDA program through gpuos
//	gpuos ps       list sessions
//	gpuos top      a live per-tenant view
//	gpuos audit    show the audit log
//	gpuos demo     run the whole system on this machine and check the results
//	gpuos doctor   say which backend gpuos would use, and why
//	gpuos version  print the version
//
// "gpuos driver" is internal: the manager starts it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Version is the gpuos version.
const Version = "0.1.0"

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	hidden  bool
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errUsage is returned for bad command lines: the message was already printed.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "gpuos: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
			return 2
		}
		// An exitCode was already reported (or is a program's own status, for run).
		var ec exitCode
		if errors.As(err, &ec) {
			return int(ec)
		}
		fmt.Fprintf(stderr, "gpuos %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

// exitCode makes a command exit with a particular status.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: gpuos <command> [flags]")
	fmt.Fprintln(w)
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun gpuos <command> -h for a command's flags.")
}

// newFlags returns a flag set that reports errors to stderr and returns them.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("gpuos "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func init() {
	register(&command{name: "version", summary: "print the version", run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		fmt.Fprintf(stdout, "gpuos %s (protocol %d.%d)\n", Version, protoMajor, protoMinor)
		return nil
	}})
}
