// Package supervise runs the loops of the process's roles and keeps what of the process is
// degraded.
//
// A Group runs each loop it is given (Go) until Stop: a loop that fails, returns early or panics
// is logged, reported degraded and started again after a pause that doubles, from RestartPause
// up to RestartMaxPause; once it has run HealthyAfter without failing, it is no longer reported
// degraded and the pause starts over. A failing loop never stops the others or the process.
//
// The group is also where the process's parts report their own state (Fail, Recovered: the
// projector standing by, storage refusing writes), read back by /readyz (Degraded, which names no
// stream, host or process) and by the admin status (Snapshot, with the errors). A loop clears only
// what its supervision recorded, never a part's own report. Failures the process cannot go on
// without (a listener that stops serving) go to Err through Fatal.
//
// It imports the standard library and events (its context-aware sleep), nothing of the roles.
package supervise
