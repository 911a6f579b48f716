// Package envflag gives every flag of a command an environment variable twin: PUBLISHER_ and the
// flag's name in upper case with hyphens as underscores (--data-dir ↔ PUBLISHER_DATA_DIR), so
// that a container sets in its environment what a shell passes on the command line.
//
// It imports the standard library only. The command line wins over the environment, and a value
// of the environment that a flag refuses is named by its variable, never applied in part.
package envflag
