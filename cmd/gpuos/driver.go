package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"github.com/gpuos/gpuos/internal/driver"
)

func init() {
	register(&command{name: "driver", summary: "(internal) a driver process, started by serve", run: driverCmd, hidden: true})
}

func driverCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := driver.RunProcess(ctx, args, stderr)
	switch {
	case errors.Is(err, driver.ErrDeviceLostExit):
		os.Exit(driver.ExitDeviceLost)
	case errors.Is(err, flag.ErrHelp):
		return errUsage
	}
	return err
}
