package ptx

// Inspect visits n and everything under it in source order, depth first:
// module items, function parameters and bodies, nested blocks, instructions, a
// guard's register, operands and the operands inside them. If f returns false
// for a node, Inspect does not descend into it. Nil nodes are skipped.
func Inspect(n Node, f func(Node) bool) {
	if n == nil || !f(n) {
		return
	}
	switch n := n.(type) {
	case *Module:
		for _, it := range n.Items {
			Inspect(it, f)
		}
	case *Function:
		for _, v := range n.Returns {
			Inspect(v, f)
		}
		for _, v := range n.Params {
			Inspect(v, f)
		}
		for _, d := range n.Directives {
			Inspect(d, f)
		}
		if n.Body != nil {
			Inspect(n.Body, f)
		}
	case *Var:
		if n.Init != nil {
			Inspect(n.Init, f)
		}
	case *Directive:
		for _, g := range n.Args {
			inspectOperands(g, f)
		}
	case *Section:
		inspectStmts(n.Body, f)
	case *Data:
		inspectOperands(n.Values, f)
	case *Block:
		inspectStmts(n.Stmts, f)
	case *Prototype:
		for _, v := range n.Returns {
			Inspect(v, f)
		}
		for _, v := range n.Params {
			Inspect(v, f)
		}
		for _, d := range n.Directives {
			Inspect(d, f)
		}
	case *Instruction:
		if n.Guard != nil && n.Guard.Reg != nil {
			Inspect(n.Guard.Reg, f)
		}
		inspectOperands(n.Operands, f)
	case *Address:
		if n.Base != nil {
			Inspect(n.Base, f)
		}
	case *Vector:
		inspectOperands(n.Elems, f)
	case *Bracket:
		inspectOperands(n.Elems, f)
	case *Paren:
		inspectOperands(n.Elems, f)
	case *Pair:
		Inspect(n.First, f)
		Inspect(n.Second, f)
	case *Not:
		Inspect(n.X, f)
	case *Expr:
		Inspect(n.X, f)
		if n.Y != nil {
			Inspect(n.Y, f)
		}
	}
}

func inspectStmts(ss []Stmt, f func(Node) bool) {
	for _, s := range ss {
		Inspect(s, f)
	}
}

func inspectOperands(os []Operand, f func(Node) bool) {
	for _, o := range os {
		if o != nil {
			Inspect(o, f)
		}
	}
}

// Rewrite replaces each statement of b, and of the blocks nested in it, with
// what f returns for it: return []Stmt{s} to keep s, nil to delete it, or
// several statements to insert code around it. A nested *Block's own
// statements are rewritten first; then the block itself is passed to f.
// Statements that f returns are not rewritten again.
func (b *Block) Rewrite(f func(s Stmt) []Stmt) {
	out := make([]Stmt, 0, len(b.Stmts))
	for _, s := range b.Stmts {
		if nb, ok := s.(*Block); ok {
			nb.Rewrite(f)
		}
		out = append(out, f(s)...)
	}
	b.Stmts = out
}
