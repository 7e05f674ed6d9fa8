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
// common hand-written forms of inline assembly and the output of LLVM's NVPTX
// back end (Triton): every directive, debug sections, call sequences,
// predicate pairs, vector, texture and tensor-map operands. It keeps the
// meaning of the source, not its layout: comments and whitespace are dropped,
// numbers keep their value (and whether they were written in hex), and
// directives it does not know are kept generically as a [Directive].
// Printing a parsed module and parsing the result gives an equal tree
// (ignoring Line fields), and printing is idempotent.
//
// Conventions a consumer must know:
//   - Instructions are an opcode and its dot-modifiers in source order
//     ("ld" [".global" ".nc" ".v4" ".f32"]), so new PTX instructions parse
//     without changes here; only the opcode must be one PTX defines.
//     [Instruction.Type], [Instruction.StateSpace], [Instruction.AccessSize]
//     and friends interpret the modifiers.
//   - A name that starts with "%" is always a *[Reg] (special registers
//     included: "%tid.x"); a bare name is a *Reg where a .reg declaration of
//     it is in scope (nvcc's temp_param_reg, inline-asm predicates), else a
//     *[Symbol] (label, variable, function, parameter or prototype).
//   - Labels are scoped like registers: inline-asm blocks may reuse a label
//     name in sibling { } blocks, so resolve a label in the innermost block
//     that declares it.
//   - "[x+off]" is an *[Address]; "[a, {b, c}]" is a *[Bracket]; "(a, b)" is a
//     *[Paren] (call lists, or a parenthesised constant expression).
//   - Module-scope declarations with several names are split into one *[Var]
//     per name; ".reg .b32 %r<6>" is one Var with Count 6.
//
// A parse error is a *[SyntaxError] carrying the line and column; it matches
// [ErrSyntax] and [v1.ErrMalformed] under errors.Is. Input nested deeper than
// a fixed limit is rejected, so hostile input cannot exhaust the stack.
//
// The package has no global mutable state and takes no locks; a tree is not
// safe for concurrent mutation, but concurrent reads and printing are fine.
package ptx
