// Package mangle reads what an Itanium C++ ABI mangled function name
// (_Z…, as nvcc and every CUDA library emit for kernels) says about the
// function's parameters: for each one, whether its type is a pointer or
// reference, a class or other compound type, a builtin integer, a builtin
// floating-point type, or std::nullptr_t.
//
// It is not a demangler that prints names: it parses exactly the part of the
// grammar kernel names use and reports ErrUncertain for everything else
// (local names, expressions in template arguments, decltype, operators,
// vendor extensions it cannot size), so a caller that acts on the answer
// never acts on a guess. Substitutions (S_, S0_ …) and template parameters
// (T_ …) are not resolved: they name a compound type, as far as this package
// says, even where they stand for a pointer or a builtin.
//
// The driver uses it for allowlisted machine code, where the mangled name is
// all there is to tell a parameter that may hold an address from one that
// cannot.
//
// The package has no state and no locks.
package mangle
