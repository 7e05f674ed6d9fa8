package guard

// SetRangeWorkBudget sets the range analysis' work budget for a test and
// returns a function that restores it.
func SetRangeWorkBudget(n int) (restore func()) {
	old := rangeWorkBudget
	rangeWorkBudget = n
	return func() { rangeWorkBudget = old }
}
