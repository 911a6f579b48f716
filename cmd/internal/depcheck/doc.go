// Package depcheck holds the test of the module's dependency directions: which of its packages
// may import which. It has no code of its own.
package depcheck
