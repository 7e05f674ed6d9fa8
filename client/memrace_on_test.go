//go:build race

package client_test

// raceBuild: the race detector slows the software GPU's interpreter tenfold,
// so the heaviest tests skip.
const raceBuild = true
