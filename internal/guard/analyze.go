package guard

// facts are what the guard proved about a function's registers.
type facts struct{}

func analyze(r *fnRewriter) *facts { return &facts{} }

// provenReg reports whether an access at [reg+off] is proven inside a
// variable of its space.
func (f *facts) provenReg(reg string, off int64, acc access) bool { return false }
