package client_test

import (
	"testing"

	"github.com/gpuos/gpuos/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
