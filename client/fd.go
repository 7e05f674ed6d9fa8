package client

import (
	v1 "github.com/gpuos/gpuos/api/v1"
	"golang.org/x/sys/unix"
)

func closeFD(fd int) { unix.Close(fd) }

// oneFD returns the one descriptor a reply must carry; otherwise it closes
// them all and reports the reply malformed.
func oneFD(fds []int, what string) (int, error) {
	if len(fds) != 1 {
		for _, fd := range fds {
			closeFD(fd)
		}
		return -1, v1.Errorf(v1.CodeMalformed, "%s: reply carried %d descriptors, want 1", what, len(fds))
	}
	return fds[0], nil
}
