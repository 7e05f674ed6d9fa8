// Package abitest reads the two texts package cuda is checked against: the table of
// traced cuGetProcAddress lookups (testdata/procaddress.txt) and the project's C header
// (include/cuda.h). The tests of package cuda and the generator of verify.c share it.
package abitest
