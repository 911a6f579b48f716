// Package logging makes the process's logger: text lines on a writer, at a level given by name,
// none of them growing with what it reports.
//
// Every record goes through a handler that clips it before the text handler writes it: a value's
// text to maxAttrText bytes (at a rune boundary, saying how much was left out), a record to
// maxAttrs values and maxRecordText bytes in all (counting the values left out). A joined error
// of thousands of establishments still makes a line of a few kilobytes that says what happened.
//
// It imports the standard library only.
package logging
