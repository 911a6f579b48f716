package webhook

// SetMaxWindowSignals sets how many signals a closing window reads, for the test that calls it,
// and returns a function that restores the limit. Tests that use it must not run in parallel.
func SetMaxWindowSignals(n int) (restore func()) {
	old := maxWindowSignals
	maxWindowSignals = n
	return func() { maxWindowSignals = old }
}
