package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/config"
)

// The operator's documentation (docs/) is checked against the code it
// describes, so that it cannot fall behind without a test failing.

const repoRoot = "../.."

// readDocs returns the text of every docs/*.md, by file name.
func readDocs(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no docs/*.md found (%v)", err)
	}
	docs := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Base(n)] = string(b)
	}
	return docs
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestDocsConfigurationsParse: every YAML block in docs/ is a configuration
// the daemon accepts.
func TestDocsConfigurationsParse(t *testing.T) {
	n := 0
	for name, text := range readDocs(t) {
		for i, m := range yamlBlock.FindAllStringSubmatch(text, -1) {
			n++
			if _, err := config.Parse([]byte(m[1])); err != nil {
				t.Errorf("%s, YAML block %d: %v", name, i+1, err)
			}
		}
	}
	if n < 2 {
		t.Errorf("%d YAML blocks in docs/, want the examples of configuration.md and scheduling.md", n)
	}
}

// TestDocsConfigurationKeys: docs/configuration.md names every key the
// configuration file has.
func TestDocsConfigurationKeys(t *testing.T) {
	doc := readDocs(t)["configuration.md"]
	var keys []string
	for _, typ := range []reflect.Type{reflect.TypeFor[config.Config](), reflect.TypeFor[config.Tenant](), reflect.TypeFor[config.SessionLimits]()} {
		for f := range typ.Fields() {
			if k, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); k != "" && k != "-" {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) < 20 {
		t.Fatalf("found %d configuration keys, want every key of Config, Tenant and SessionLimits", len(keys))
	}
	for _, k := range keys {
		if !strings.Contains(doc, "| `"+k+"` |") {
			t.Errorf("docs/configuration.md has no table row for the configuration key %q", k)
		}
	}
}

var envName = regexp.MustCompile(`"(GPUOS_[A-Z0-9_]*[A-Z0-9])"`)

// TestDocsEnvironment: every environment variable the code reads (a
// "GPUOS_..." string in a non-test Go file) is named in docs/.
func TestDocsEnvironment(t *testing.T) {
	var all strings.Builder
	for _, text := range readDocs(t) {
		all.WriteString(text)
	}
	docs := all.String()
	found := map[string][]string{}
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range envName.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(found[m[1]], path) {
				found[m[1]] = append(found[m[1]], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 30 {
		t.Fatalf("found %d environment variables in the sources, want the 40-odd gpuos reads", len(found))
	}
	for name, files := range found {
		// `NAME`, `NAME=value` or `NAME, ...`: not the prefix of a longer name.
		if !regexp.MustCompile("`" + name + "[^A-Z0-9_]").MatchString(docs) {
			t.Errorf("%s (read in %s) is not documented in docs/", name, strings.Join(files, ", "))
		}
	}
}
