package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/config"
)

// The policy engine's subcommands of gpuos policy (policy.go has list, use,
// set-share and tenants).
var policySubcommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"load":   policyLoadCmd,
	"unload": policyUnloadCmd,
	"maps":   policyMapsCmd,
}

const policyEngineUsage = `  gpuos policy load FILE.wasm [--name NAME] [--socket PATH] [--json]
      verify and load a WebAssembly policy on every device (docs/policies.md);
      NAME defaults to the file's name without .wasm
  gpuos policy unload NAME [--socket PATH]
      unload a loaded policy; if it is active the built-in fallback takes over
  gpuos policy maps [PREFIX] [--socket PATH] [--json]
      the typed maps (all, or those whose name starts with PREFIX)
`

// maxPolicyFile bounds a module read from disk (the protocol's frame limit).
const maxPolicyFile = 16 << 20

// hookNames are the ABI's hooks by bit.
var hookNames = []string{"init", "session_open", "submit", "dispatch", "complete", "preempt", "tick", "alloc", "pressure", "fault"}

func policyEngineFlags(sub string, stderr io.Writer) (*flag.FlagSet, *string, *bool) {
	fs := newFlags("policy "+sub, stderr)
	fs.Usage = func() { fmt.Fprint(stderr, "usage:\n"+policyEngineUsage) }
	socket := fs.String("socket", "", "the daemon's socket (default $GPUOS_SOCKET, else the default path)")
	asJSON := fs.Bool("json", false, "print JSON")
	return fs, socket, asJSON
}

func policyLoadCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, socket, asJSON := policyEngineFlags("load", stderr)
	name := fs.String("name", "", "the policy's name (default: the file's name without .wasm)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return errUsage
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, "gpuos policy load: names one module file\nusage:\n"+policyEngineUsage)
		return errUsage
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	wasm, err := io.ReadAll(io.LimitReader(f, maxPolicyFile+1))
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", pos[0], err)
	}
	if len(wasm) > maxPolicyFile {
		return v1.Errorf(v1.CodeInvalidArgument, "%s is larger than %s", pos[0], config.Size(maxPolicyFile).Human())
	}
	if *name == "" {
		*name = strings.ToLower(strings.TrimSuffix(filepath.Base(pos[0]), ".wasm"))
	}
	mgr, err := dialManager(ctx, *socket)
	if err != nil {
		return err
	}
	defer mgr.Close()
	var out v1.PolicyLoaded
	if err := mgr.Call(ctx, &v1.PolicyLoad{Name: *name, Module: wasm}, &out); err != nil {
		return fmt.Errorf("load %s: %w", pos[0], err)
	}
	if *asJSON {
		return printJSON(stdout, &out)
	}
	var hooks []string
	for i, h := range hookNames {
		if out.Hooks&(1<<i) != 0 {
			hooks = append(hooks, h)
		}
	}
	fmt.Fprintf(stdout, "loaded policy %s: %s, sha256 %s, hooks %s\n", out.Name, config.Size(out.Size).Human(),
		out.SHA256, strings.Join(hooks, " "))
	fmt.Fprintf(stdout, "make it active with: gpuos policy use %s\n", out.Name)
	return nil
}

func policyUnloadCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, socket, _ := policyEngineFlags("unload", stderr)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return errUsage
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, "gpuos policy unload: names one policy\nusage:\n"+policyEngineUsage)
		return errUsage
	}
	mgr, err := dialManager(ctx, *socket)
	if err != nil {
		return err
	}
	defer mgr.Close()
	if err := mgr.Call(ctx, &v1.PolicyUnload{Name: pos[0]}, nil); err != nil {
		return fmt.Errorf("unload %s: %w", pos[0], err)
	}
	fmt.Fprintf(stdout, "unloaded policy %s\n", pos[0])
	return nil
}

func policyMapsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, socket, asJSON := policyEngineFlags("maps", stderr)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return errUsage
	}
	if len(pos) > 1 {
		fmt.Fprint(stderr, "gpuos policy maps: takes at most one name prefix\nusage:\n"+policyEngineUsage)
		return errUsage
	}
	prefix := ""
	if len(pos) == 1 {
		prefix = pos[0]
	}
	mgr, err := dialManager(ctx, *socket)
	if err != nil {
		return err
	}
	defer mgr.Close()
	var out v1.PolicyMapValues
	if err := mgr.Call(ctx, &v1.PolicyMaps{Prefix: prefix}, &out); err != nil {
		return fmt.Errorf("policy maps: %w", err)
	}
	if *asJSON {
		return printJSON(stdout, &out)
	}
	printMaps(stdout, out.Maps)
	return nil
}

func mapKindName(k v1.MapKind) string {
	switch k {
	case v1.MapOfHost:
		return "host"
	case v1.MapOfBuiltin:
		return "built-in"
	case v1.MapOfLoaded:
		return "loaded"
	}
	return fmt.Sprint(k)
}

// printMaps prints one line per map value; maps with no value set get a
// line of their own.
func printMaps(w io.Writer, maps []v1.MapInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MAP\tDEV\tKIND\tTENANT\tVALUE")
	for _, m := range maps {
		if len(m.Values) == 0 {
			fmt.Fprintf(tw, "%s\t%d\t%s\t-\t-\n", m.Name, m.Device, mapKindName(m.Kind))
		}
		for _, v := range m.Values {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\n", m.Name, m.Device, mapKindName(m.Kind), v.Tenant, v.Value)
		}
	}
	tw.Flush()
}
