// Package envflag is the grammar every command of the binary shares on its command line: flags
// anywhere among the arguments, each with an environment variable twin (PUBLISHER_ and the flag's
// name in upper case with hyphens as underscores: --data-dir ↔ PUBLISHER_DATA_DIR), so that a
// container sets in its environment what a shell passes on the command line; a request for help
// answered with the command's usage; and the errors of a command line that cannot run, named as
// such, with a suggestion for a mistyped name.
//
// It imports the standard library only, and keeps its flag package: a command declares its flags
// on a flag.FlagSet and calls Parse. Its invariants:
//   - The command line wins over the environment, and a value of the environment that a flag
//     refuses is named by its variable, never applied in part.
//   - Flags may follow the arguments, and -- ends the flags: what follows is arguments even when
//     it starts with a hyphen. A flag takes its value after = or, unless it is a boolean, in the
//     next argument; - alone is an argument (standard input, to the commands that read it).
//   - -h, -help and --help ask for help wherever they are, unless the command defines such a
//     flag: the answer (Help) holds the usage and nothing is applied, so that help never fails
//     on a missing token or a wrong value elsewhere on the line.
//   - Every refusal of a command line is a *UsageError naming the command and the flag or
//     argument at fault, which the binary tells apart from a failed operation by its exit status.
package envflag
