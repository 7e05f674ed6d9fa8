package wire

// SetHedgeWatchHook sets a function run before each watch of hedged serving
// (primary: Serve's own goroutine) and
// returns a function that unsets it.
func SetHedgeWatchHook(f func(primary bool)) (unset func()) {
	hedgeWatchHook.Store(&f)
	return func() { hedgeWatchHook.Store(nil) }
}

// SetHedgeLookHook sets a function run between two looks of Serve's
// goroutine while it watches (hedged serving), and returns a function that
// unsets it.
func SetHedgeLookHook(f func()) (unset func()) {
	hedgeLookHook.Store(&f)
	return func() { hedgeLookHook.Store(nil) }
}

// SetHedgeStallHook sets a function run when Serve's goroutine finds it was
// away between two looks (the helper then watches on demand), and returns a
// function that unsets it.
func SetHedgeStallHook(f func()) (unset func()) {
	hedgeStallHook.Store(&f)
	return func() { hedgeStallHook.Store(nil) }
}
