// Command guardtool runs gpuos's PTX memory guard outside the daemon, for
// the GPU acceptance scripts in bench/guard (which run on a machine without
// Go: build it with go build -o .carry/guardtool ./internal/guard/cmd/guardtool).
//
//	guardtool guard [-keep-loads] IN.ptx OUT.ptx
//	    guard one module; print its statistics as JSON on stdout
//	guardtool corpus [-out DIR] [-j N] [-slow D] FILE_OR_DIR...
//	    parse and guard every .ptx file found, N at once; write the guarded
//	    modules to DIR (if given), one TSV line per file on stdout (with the
//	    milliseconds it took), and a summary; modules slower than D are
//	    named on standard error as they finish
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
	"runtime"
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
  guardtool corpus [-out DIR] [-j N] FILE_OR_DIR... parse and guard every .ptx file; TSV per file and a summary
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
	jobs := fset.Int("j", runtime.NumCPU(), "modules handled at once")
	slow := fset.Duration("slow", 10*time.Second, "report on standard error each module that takes longer than this")
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
	if *jobs < 1 {
		*jobs = 1
	}
	start := time.Now()
	// Modules are handled in parallel (the corpus is over a GiB) but reported
	// in file order, so two runs' TSVs compare line by line.
	results := make([]corpusResult, len(files))
	done := make([]chan struct{}, len(files))
	for i := range done {
		done[i] = make(chan struct{})
	}
	next := make(chan int)
	go func() {
		for i := range files {
			next <- i
		}
		close(next)
	}()
	for w := 0; w < *jobs; w++ {
		go func() {
			for i := range next {
				results[i] = corpusOne(files[i], *outDir, *slow)
				close(done[i])
			}
		}()
	}
	var nParse, nGuard, nBytes int
	reasons := map[string]int{}
	fmt.Println("file\tbytes\tparse\tguard\taccesses\tchecked\thoisted\treused\tms\tdetail")
	for i, f := range files {
		<-done[i]
		r := &results[i]
		if r.err != nil {
			return r.err
		}
		nBytes += r.size
		if r.parsed {
			nParse++
		}
		if r.guarded {
			nGuard++
		}
		if r.reason != "" {
			reasons[r.reason]++
		}
		fmt.Printf("%s\t%d\t%s\t%d\t%s\n", f, r.size, r.columns, r.elapsed.Milliseconds(), r.detail)
	}
	n := len(files)
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	fmt.Printf("\n# corpus: %d files, %.1f MiB, %v with %d workers\n", n, float64(nBytes)/(1<<20), time.Since(start).Round(time.Millisecond), *jobs)
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

// corpusResult is one module's line of the corpus report.
type corpusResult struct {
	size            int
	parsed, guarded bool
	columns         string // parse, guard and the four statistics, tab-separated
	detail          string
	reason          string // the refusal's category, "" when guarded
	elapsed         time.Duration
	err             error // an I/O error, which ends the run
}

func corpusOne(f, outDir string, slow time.Duration) (r corpusResult) {
	start := time.Now()
	defer func() {
		r.elapsed = time.Since(start)
		if slow > 0 && r.elapsed > slow {
			fmt.Fprintf(os.Stderr, "guardtool: slow: %s took %v (%d bytes)\n", f, r.elapsed.Round(time.Millisecond), r.size)
		}
	}()
	src, err := os.ReadFile(f)
	if err != nil {
		r.err = err
		return r
	}
	r.size = len(src)
	m, perr := ptx.Parse(bytes.TrimRight(src, "\x00"))
	if perr != nil {
		r.columns, r.detail, r.reason = "FAIL\t-\t\t\t\t", oneLine(perr), "parse: "+reason(perr)
		return r
	}
	r.parsed = true
	res, gerr := guard.Guard(m, guard.Options{})
	if gerr != nil {
		r.columns, r.detail, r.reason = "ok\tREFUSED\t\t\t\t", oneLine(gerr), "guard: "+reason(gerr)
		return r
	}
	out := m.Bytes()
	if _, err := ptx.Parse(out); err != nil {
		r.columns, r.detail = "ok\tFAIL\t\t\t\t", "guarded output does not parse: "+oneLine(err)
		r.reason = "guard: output does not parse (bug)"
		return r
	}
	r.guarded = true
	s := res.Stats
	r.columns = fmt.Sprintf("ok\tok\t%d\t%d\t%d\t%d", s.Accesses, s.Checked, s.Hoisted, s.Reused)
	r.detail = fmt.Sprintf("%d kernels", len(res.Kernels))
	if outDir != "" {
		name := strings.TrimSuffix(filepath.Base(f), ".ptx") + ".guarded.ptx"
		r.err = os.WriteFile(filepath.Join(outDir, name), out, 0o644)
	}
	return r
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
