// Package readmecheck holds the tests that README.md stays true to the repository: every link to
// one of its headings resolves, its contents list every section, every command line it shows
// names a command and flags the publisher binary has, and every repository path it names exists.
// It has no code of its own.
package readmecheck
