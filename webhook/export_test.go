package webhook

// SetMaxWindowSignals sets how many signals a closing window reads, for the test that calls it,
// and returns a function that restores the limit. Tests that use it must not run in parallel.
func SetMaxWindowSignals(n int) (restore func()) {
	old := maxWindowSignals
	maxWindowSignals = n
	return func() { maxWindowSignals = old }
}

// SetMaxDeletes sets how many signals a closed window deletes one at a time before it purges
// them instead, for the test that calls it, and returns a function that restores the limit. Tests
// that use it must not run in parallel.
func SetMaxDeletes(n int) (restore func()) {
	old := maxDeletes
	maxDeletes = n
	return func() { maxDeletes = old }
}
