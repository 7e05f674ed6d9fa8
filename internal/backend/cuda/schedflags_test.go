package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

// $GPUOS_CUDA_SCHED sets the primary context's scheduling flag before the
// context is retained; unset, the flags are left alone; a bad value is
// refused before any context is retained.
func TestSchedFlags(t *testing.T) {
	for _, tc := range []struct {
		env  string // "-": unset
		want string // flags the fake driver was given; "" none
		err  error
	}{
		{"-", "", nil},
		{"auto", "0", nil},
		{"spin", "1", nil},
		{"yield", "2", nil},
		{"blocking", "4", nil},
		{"fast", "", backend.ErrInvalidArgument},
	} {
		t.Run(tc.env, func(t *testing.T) {
			b := openFake(t)
			file := filepath.Join(t.TempDir(), "flags")
			t.Setenv("FAKECUDA_FLAGS_FILE", file)
			if tc.env == "-" {
				t.Setenv(SchedEnv, "") // restored at cleanup
				os.Unsetenv(SchedEnv)
			} else {
				t.Setenv(SchedEnv, tc.env)
			}
			d, err := b.open(0)
			if err == nil {
				defer d.Close()
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("open: %v, want %v", err, tc.err)
			}
			got, rerr := os.ReadFile(file)
			if tc.want == "" {
				if rerr == nil {
					t.Fatalf("flags set to %q, want left alone", got)
				}
				return
			}
			if strings.TrimSpace(string(got)) != tc.want {
				t.Fatalf("flags %q (%v), want %s", got, rerr, tc.want)
			}
		})
	}
}
