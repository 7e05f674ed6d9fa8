// Package ptx is gpuos's front end for PTX, NVIDIA's virtual GPU assembly: an
// abstract syntax tree, a parser and a printer.
//
// It owns the tree that every later stage of the PTX pipeline works on (parse →
// verify → guard → slice → load): the software GPU compiles it for its
// interpreter, the memory guard rewrites it (inserting instructions, registers
// and module globals) and the printer turns the result back into PTX that
// ptxas accepts.
//
// The parser accepts what nvcc 12 and 13 emit for sm_80 and sm_90, plus the
// common hand-written forms of inline assembly and Triton output: every
// directive, debug sections, call sequences, predicate pairs, vector and
// texture operands. It keeps the meaning of the source, not its layout:
// comments and whitespace are dropped, numbers keep their value (and whether
// they were written in hex), and directives it does not know are kept
// generically. Printing a parsed module and parsing the result gives an equal
// tree (ignoring source line numbers), and printing is idempotent.
//
// Instructions are kept as an opcode and its dot-modifiers in source order
// ("ld" [".global" ".nc" ".v4" ".f32"]) so that nothing is lost and new PTX
// instructions parse without changes here; helpers such as
// [Instruction.Type], [Instruction.StateSpace] and [Instruction.AccessSize]
// interpret the modifiers for the stages that need them.
//
// A parse error is a *[SyntaxError] carrying the line and column; it matches
// [ErrSyntax] and [v1.ErrMalformed] under errors.Is.
//
// The package has no global state and takes no locks; a tree is not safe for
// concurrent mutation, but concurrent reads (and printing) are fine.
package ptx
