package client

import "golang.org/x/sys/unix"

func closeFD(fd int) { unix.Close(fd) }
