//go:build !race

package client_test

const raceBuild = false
