package ptx

// Node is any element of the tree: a *Module, an Item, a Stmt or an Operand.
// Use [Inspect] to visit a tree.
type Node interface{ node() }

// Item is a top-level statement of a module: *Var, *Function, *Directive or
// *Section.
type Item interface {
	Node
	item()
}

// Stmt is a statement in a function body or a debug section: *Instruction,
// *Label, *Var, *Directive, *Block, *Prototype, or (in sections only) *Data.
type Stmt interface {
	Node
	stmt()
}

// Operand is an instruction, initializer or directive operand: *Reg, *Sink,
// *Int, *Float, *String, *Symbol, *Address, *Vector, *Bracket, *Paren, *Pair,
// *Not or *Expr.
type Operand interface {
	Node
	operand()
	// String returns the operand as it is printed in PTX.
	String() string
}

// Module is one PTX translation unit.
type Module struct {
	Version     string   // the .version operand as written, e.g. "9.0"
	Target      []string // the .target entries, e.g. ["sm_90a"] or ["sm_80", "debug"]
	AddressSize int      // 32 or 64; 0 when the module has no .address_size
	Items       []Item   // everything after the header, in source order
}

// Linkage is the linking directive of a module-scope variable or function.
type Linkage uint8

// Linkages. LinkNone means the symbol is local to the module.
const (
	LinkNone    Linkage = iota
	LinkVisible         // .visible
	LinkExtern          // .extern
	LinkWeak            // .weak
	LinkCommon          // .common
)

// Var declares one variable: a register (or a parameterized family of
// registers), a parameter, or a variable in memory. A declaration with several
// names (".reg .b32 a, b;") is parsed into one Var per name.
type Var struct {
	Linkage Linkage
	Space   StateSpace
	Attrs   []Attribute // .attribute(.managed) and the like, in source order
	Ptr     *PtrAttr    // kernel parameter .ptr attribute, or nil
	Align   int         // the .align operand; 0 when absent
	Vector  int         // 2, 4 or 8 for .v2/.v4/.v8; 0 for a scalar
	Type    Type
	Name    string
	// Dims are the array dimensions, outermost first; UnsizedDim stands for
	// "[]" (an external or dynamically sized array). Nil for a scalar.
	Dims []int
	// Count is N for a parameterized register declaration "%r<N>", which
	// declares %r0 … %r(N-1); 0 otherwise.
	Count int
	// Init is the initializer after "=", or nil. A brace list is a *Vector
	// (nested for multi-dimensional arrays); addresses of other variables are
	// *Symbol values (with Generic and Offset for generic(sym)+off).
	Init Operand
}

// UnsizedDim is the Var.Dims entry for an array declared with "[]".
const UnsizedDim = -1

// Attribute is a variable or function attribute inside .attribute(...), such as
// .managed or .unified(0x12, 0x34).
type Attribute struct {
	Name string    // ".managed", ".unified"
	Args []Operand // the parenthesised arguments, if any
}

// PtrAttr is the ".ptr[.space][.align N]" attribute of a kernel parameter.
type PtrAttr struct {
	Space StateSpace // SpaceNone for a generic pointer
	Align int        // 0 when absent
}

// Function is a kernel (.entry) or device function (.func), with a body or, for a
// declaration (prototype), without.
type Function struct {
	Linkage Linkage
	Entry   bool // .entry (a kernel) rather than .func
	Attrs   []Attribute
	Name    string
	Returns []*Var // .func return parameters (Space SpaceParam or SpaceReg)
	Params  []*Var
	// Directives are the performance-tuning and other directives between the
	// parameter list and the body: .maxntid, .reqntid, .minnctapersm, .maxnreg,
	// .maxclusterrank, .reqnctapercluster, .explicitcluster, .noreturn, .pragma.
	Directives []*Directive
	Body       *Block // nil for a declaration
	Line       int    // source line of the .entry/.func keyword; 0 if built
}

// Directive is a directive kept as written: .file, .loc, .pragma, .alias,
// .branchtargets, .calltargets, performance directives, and any directive the
// parser does not otherwise know.
//
// Args are the operands in comma-separated groups of space-separated operands:
// ".loc 1 23 5, inlined_at 1 20 3" has Args [[1 23 5] [inlined_at 1 20 3]];
// ".maxntid 256, 1, 1" has [[256] [1] [1]]; ".pragma "nounroll";" has
// [["nounroll"]].
type Directive struct {
	Label string // the label that names it (".branchtargets", ".calltargets"), or ""
	Name  string // with its dot: ".loc"
	Args  [][]Operand
	// Semicolon records that the directive was terminated by ";". The printer
	// also ends the directives that PTX requires it for (.pragma, .alias, ...).
	Semicolon bool
}

// Section is a ".section .debug_xxx { ... }" block of DWARF data.
type Section struct {
	Name string // ".debug_info"
	Body []Stmt // *Label and *Data
}

// Data is one data line of a debug section: ".b8 1, 2, 3" or ".b64 $L__func_begin0".
type Data struct {
	Type   Type
	Values []Operand // *Int, *Symbol, *Expr
}

// Block is a brace-delimited list of statements: a function body, or a nested
// scope (nvcc wraps call sequences and inline assembly in one).
type Block struct {
	Stmts []Stmt
}

// Label marks the position of the next statement: "$L__BB0_2:".
type Label struct {
	Name string
}

// Prototype is a ".callprototype" declaration naming the signature of an
// indirect call: "prototype_0 : .callprototype (.param .b32 _) _ (.param .b64 _);".
type Prototype struct {
	Name    string
	Returns []*Var
	Params  []*Var
	// Directives that follow the parameter list, such as .noreturn.
	Directives []*Directive
}

// Instruction is one PTX instruction.
type Instruction struct {
	Guard    *Guard   // the "@%p" / "@!%p" predicate, or nil
	Opcode   string   // the first dotted component: "ld", "cp", "mma", "setp"
	Mods     []string // the rest, with dots, in source order: ".global", ".nc", ".v4", ".f32"
	Operands []Operand
	Line     int // source line; 0 for an instruction built by a program
}

// Guard is an instruction's predicate guard.
type Guard struct {
	Reg     *Reg
	Negated bool // "@!p"
}

// Reg is a register operand: a declared register ("%r1", or a bare name such as
// "temp_param_reg" or "p" declared with .reg in scope) or a special register,
// whose component stays part of the name ("%tid.x", "%clock64", "%envreg3").
type Reg struct {
	Name string
}

// Sink is the "_" operand, which discards a result.
type Sink struct{}

// Int is an integer literal. Value holds the 64-bit pattern: hex literals
// above the int64 range wrap to negative values, as PTX treats literals as
// 64-bit. Hex and Unsigned only record how the literal was written (a 0x
// prefix, a U suffix); octal and binary literals print as decimal.
type Int struct {
	Value    int64
	Unsigned bool
	Hex      bool
}

// Float is a floating-point literal: 0fXXXXXXXX (single), 0dXXXXXXXXXXXXXXXX
// (double) or a decimal literal, which PTX reads as double.
type Float struct {
	// Bits is the IEEE-754 bit pattern: a float32's bits when Single,
	// otherwise a float64's.
	Bits    uint64
	Single  bool
	Decimal bool // written in decimal notation ("1.5") rather than hex bits
}

// String is a string literal, as in .file and .pragma. Value is the text
// between the quotes as written, escapes included.
type String struct {
	Value string
}

// Symbol names a label, variable, function or prototype. In initializers and
// address-taking moves it may be "generic(name)" and carry an offset
// ("name+8").
type Symbol struct {
	Name    string
	Generic bool  // generic(name)
	Offset  int64 // name+Offset
}

// Address is a memory operand: "[%rd1]", "[%rd1+8]", "[%rd1+-4]", "[sym]",
// "[sym+16]", or "[imm]" with a nil Base.
type Address struct {
	Base   Operand // *Reg, *Symbol or nil
	Offset int64
}

// Vector is a brace list: "{%f1, %f2, _, %f4}" in an instruction, or an
// initializer "{1, 2, 3}".
type Vector struct {
	Elems []Operand
}

// Bracket is a bracketed operand list used by texture, surface and tensor
// instructions: "[tex, {%f1, %f2}]", "[%rd1, {%r2, %r3}]".
type Bracket struct {
	Elems []Operand
}

// Paren is a parenthesised operand list of a call: "(retval0)", "(param0,
// param1)"; elsewhere a one-element Paren is a parenthesised constant
// expression "(1<<4)".
type Paren struct {
	Elems []Operand
}

// Pair is a "p|q" destination pair (setp, shfl, elect).
type Pair struct {
	First, Second Operand
}

// Not is a negated predicate source operand: "!%p1".
type Not struct {
	X Operand
}

// Expr is a constant expression that is not a plain literal or symbol+offset:
// a unary (Y nil) or binary operator, as in "$L__end-$L__start" or "1<<4".
// Parentheses are kept as a one-element *Paren, so that printing reproduces
// the grouping; operators of equal precedence group to the left.
type Expr struct {
	Op   string // "+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", unary "-" and "~"; "=" for a field of a sampler initializer
	X, Y Operand
}

func (*Module) node()      {}
func (*Var) node()         {}
func (*Function) node()    {}
func (*Directive) node()   {}
func (*Section) node()     {}
func (*Data) node()        {}
func (*Block) node()       {}
func (*Label) node()       {}
func (*Prototype) node()   {}
func (*Instruction) node() {}
func (*Reg) node()         {}
func (*Sink) node()        {}
func (*Int) node()         {}
func (*Float) node()       {}
func (*String) node()      {}
func (*Symbol) node()      {}
func (*Address) node()     {}
func (*Vector) node()      {}
func (*Bracket) node()     {}
func (*Paren) node()       {}
func (*Pair) node()        {}
func (*Not) node()         {}
func (*Expr) node()        {}

func (*Var) item()       {}
func (*Function) item()  {}
func (*Directive) item() {}
func (*Section) item()   {}

func (*Var) stmt()         {}
func (*Directive) stmt()   {}
func (*Data) stmt()        {}
func (*Block) stmt()       {}
func (*Label) stmt()       {}
func (*Prototype) stmt()   {}
func (*Instruction) stmt() {}

func (*Reg) operand()     {}
func (*Sink) operand()    {}
func (*Int) operand()     {}
func (*Float) operand()   {}
func (*String) operand()  {}
func (*Symbol) operand()  {}
func (*Address) operand() {}
func (*Vector) operand()  {}
func (*Bracket) operand() {}
func (*Paren) operand()   {}
func (*Pair) operand()    {}
func (*Not) operand()     {}
func (*Expr) operand()    {}
