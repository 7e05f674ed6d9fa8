package examples_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/examples"
	"github.com/gpuos/gpuos/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestWorkloads(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for seed := uint64(1); seed <= 3; seed++ { // fresh random inputs each round
		rng := rand.New(rand.NewPCG(seed, 99))
		for _, run := range []func() (examples.Result, error){
			func() (examples.Result, error) { return examples.VectorAdd(ctx, s, rng, 10000+int(seed)) },
			func() (examples.Result, error) { return examples.Reduce(ctx, s, rng, 30000+int(seed)*77) },
			func() (examples.Result, error) { return examples.Matmul(ctx, s, rng, 33, 47, 29+int(seed)) },
		} {
			r, err := run()
			if err != nil {
				t.Fatal(err)
			}
			if !r.OK {
				t.Errorf("%v", r)
			}
		}
	}
}
