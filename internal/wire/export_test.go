package wire

// SetHedgeWatchHook sets a function run before each watch of hedged serving
// (primary: Serve's own goroutine) and
// returns a function that unsets it.
func SetHedgeWatchHook(f func(primary bool)) (unset func()) {
	hedgeWatchHook.Store(&f)
	return func() { hedgeWatchHook.Store(nil) }
}
