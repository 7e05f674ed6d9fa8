// Command guardtool runs gpuos's PTX memory guard outside the daemon, for
// the GPU acceptance scripts in bench/guard (which run on a machine without
// Go: build it with go build -o .carry/guardtool ./internal/guard/cmd/guardtool).
//
//	guardtool guard [-keep-loads] IN.ptx OUT.ptx
//	    guard one module; print its statistics as JSON on stdout
//	guardtool corpus [-out DIR] FILE_OR_DIR...
//	    parse and guard every .ptx file found; write the guarded modules to
//	    DIR (if given), one TSV line per file on stdout, and a summary
//	guardtool fatbin IN OUT_DIR
//	    extract the PTX of a fatbin (or of an ELF with a .nv_fatbin section) into OUT_DIR
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/fatbin"
	"github.com/gpuos/gpuos/internal/guard"
	"github.com/gpuos/gpuos/internal/ptx"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "guard":
		err = cmdGuard(os.Args[2:])
	case "corpus":
		err = cmdCorpus(os.Args[2:])
	case "fatbin":
		err = cmdFatbin(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "guardtool:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  guardtool guard [-keep-loads] IN.ptx OUT.ptx   guard one module (statistics as JSON on stdout)
  guardtool corpus [-out DIR] FILE_OR_DIR...     parse and guard every .ptx file; TSV per file and a summary
  guardtool fatbin IN OUT_DIR                    extract the PTX entries of a fatbin or of an ELF's .nv_fatbin`)
	os.Exit(2)
}

func cmdGuard(args []string) error {
	fs := flag.NewFlagSet("guard", flag.ExitOnError)
	keep := fs.Bool("keep-loads", false, "leave suppressed loads' destinations unchanged instead of zeroing them")
	fs.Parse(args)
	if fs.NArg() != 2 {
		usage()
	}
	src, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	out, res, err := guardOne(src, guard.Options{KeepSuppressedLoads: *keep})
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	if err := os.WriteFile(fs.Arg(1), out, 0o644); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"file": fs.Arg(0), "kernels": res.Kernels, "functions": len(res.Functions), "stats": res.Stats,
		"relocated_globals_bytes": layoutSize(res.Globals)})
}

func layoutSize(l *guard.Layout) uint64 {
	if l == nil {
		return 0
	}
	return l.Size
}

// guardOne parses, guards and prints, then checks the output parses again.
func guardOne(src []byte, opts guard.Options) ([]byte, *guard.Result, error) {
	m, err := ptx.Parse(bytes.TrimRight(src, "\x00"))
	if err != nil {
		return nil, nil, fmt.Errorf("parse: %w", err)
	}
	res, err := guard.Guard(m, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("guard: %w", err)
	}
	out := m.Bytes()
	if _, err := ptx.Parse(out); err != nil {
		return nil, nil, fmt.Errorf("guarded output does not parse again (a bug): %w", err)
	}
	return out, res, nil
}

func cmdCorpus(args []string) error {
	fset := flag.NewFlagSet("corpus", flag.ExitOnError)
	outDir := fset.String("out", "", "write each guarded module here as NAME.guarded.ptx")
	fset.Parse(args)
	var files []string
	for _, a := range fset.Args() {
		err := filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".ptx") && !strings.HasSuffix(p, ".guarded.ptx") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	sort.Strings(files)
	if *outDir != "" {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			return err
		}
	}
	var nParse, nGuard, nBytes int
	reasons := map[string]int{}
	start := time.Now()
	fmt.Println("file\tbytes\tparse\tguard\taccesses\tchecked\thoisted\treused\tdetail")
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		nBytes += len(src)
		m, perr := ptx.Parse(bytes.TrimRight(src, "\x00"))
		if perr != nil {
			fmt.Printf("%s\t%d\tFAIL\t-\t\t\t\t\t%s\n", f, len(src), oneLine(perr))
			reasons["parse: "+reason(perr)]++
			continue
		}
		nParse++
		res, gerr := guard.Guard(m, guard.Options{})
		if gerr != nil {
			fmt.Printf("%s\t%d\tok\tREFUSED\t\t\t\t\t%s\n", f, len(src), oneLine(gerr))
			reasons["guard: "+reason(gerr)]++
			continue
		}
		out := m.Bytes()
		if _, err := ptx.Parse(out); err != nil {
			fmt.Printf("%s\t%d\tok\tFAIL\t\t\t\t\tguarded output does not parse: %s\n", f, len(src), oneLine(err))
			reasons["guard: output does not parse (bug)"]++
			continue
		}
		nGuard++
		s := res.Stats
		fmt.Printf("%s\t%d\tok\tok\t%d\t%d\t%d\t%d\t%d kernels\n", f, len(src), s.Accesses, s.Checked, s.Hoisted, s.Reused, len(res.Kernels))
		if *outDir != "" {
			name := strings.TrimSuffix(filepath.Base(f), ".ptx") + ".guarded.ptx"
			if err := os.WriteFile(filepath.Join(*outDir, name), out, 0o644); err != nil {
				return err
			}
		}
	}
	n := len(files)
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	fmt.Printf("\n# corpus: %d files, %.1f MiB, %v\n", n, float64(nBytes)/(1<<20), time.Since(start).Round(time.Millisecond))
	fmt.Printf("# parsed:  %d/%d (%.1f%%)   goal 100%%\n", nParse, n, pct(nParse, n))
	fmt.Printf("# guarded: %d/%d (%.1f%% of all, %.1f%% of parsed)   goal >= 95%%\n", nGuard, n, pct(nGuard, n), pct(nGuard, nParse))
	if len(reasons) > 0 {
		fmt.Println("# why not:")
		type kv struct {
			k string
			v int
		}
		var rs []kv
		for k, v := range reasons {
			rs = append(rs, kv{k, v})
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].v > rs[j].v || (rs[i].v == rs[j].v && rs[i].k < rs[j].k) })
		for _, r := range rs {
			fmt.Printf("#   %5d  %s\n", r.v, r.k)
		}
	}
	return nil
}

// reason condenses an error into a category: the refused form, or the code.
func reason(err error) string {
	var fe *guard.FormError
	if errors.As(err, &fe) {
		form := fe.Form
		if i := strings.IndexByte(form, '.'); i > 0 && !strings.HasPrefix(form, ".") {
			form = form[:i] // the opcode
		}
		why := fe.Why
		if len(why) > 80 {
			why = why[:80] + "…"
		}
		return form + ": " + why
	}
	var se *ptx.SyntaxError
	if errors.As(err, &se) {
		msg := se.Msg
		if len(msg) > 60 {
			msg = msg[:60] + "…"
		}
		return msg
	}
	return v1.CodeOf(err).String()
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

func cmdFatbin(args []string) error {
	if len(args) != 2 {
		usage()
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	if fatbin.IsELF(data) {
		f, err := fatbin.NewELFFile(data)
		if err != nil {
			return err
		}
		sec := f.Section(".nv_fatbin")
		if sec == nil {
			return fmt.Errorf("%s: no .nv_fatbin section", args[0])
		}
		if data, err = sec.Data(); err != nil {
			return err
		}
	}
	entries, err := fatbin.Parse(data)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(args[1], 0o755); err != nil {
		return err
	}
	base := filepath.Base(args[0])
	n := 0
	for i := range entries {
		e := &entries[i]
		if e.Kind != fatbin.KindPTX {
			continue
		}
		p, err := e.Payload()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: entry %d: %v\n", args[0], i, err)
			continue
		}
		name := filepath.Join(args[1], fmt.Sprintf("%s.%d.sm_%d.ptx", base, i, e.Arch))
		if err := os.WriteFile(name, bytes.TrimRight(p, "\x00"), 0o644); err != nil {
			return err
		}
		n++
	}
	fmt.Printf("%s: %d PTX entries of %d\n", args[0], n, len(entries))
	return nil
}
