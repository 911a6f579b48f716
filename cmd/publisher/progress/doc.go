// Package progress is the one progress display of the command line's long runs (import, verify,
// rebuild): on stderr, a bar with the rate and the time left, a plain line every interval for
// logs, or nothing, as the command's --progress and --progress-every flags say. auto is a bar on
// a terminal and plain lines otherwise.
//
// It imports the standard library, mpb (the bar) and x/term (is the output a terminal) only: a
// command says what to show through functions it reads when the display draws. Messages written
// while a display runs go through Display.Messages, above the bar and never inside a line of
// it; a bar never goes back when a count is reported late.
package progress
