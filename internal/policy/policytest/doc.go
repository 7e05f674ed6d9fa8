// Package policytest builds small WebAssembly policy modules by hand, for
// tests and benchmarks of the policy host: well-behaved ones, and ones that
// loop forever, grow their memory without bound, import what they must not
// or return decisions the ABI forbids. Building them here keeps the tests
// fast and free of a compiler.
package policytest
