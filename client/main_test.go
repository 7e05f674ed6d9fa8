package client_test

import (
	"os"
	"testing"

	"github.com/gpuos/gpuos/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(hotChildEnv) != "" {
		os.Exit(hotChild())
	}
	testenv.Main(m)
}
