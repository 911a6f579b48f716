package progress

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Establishments shows work counted in establishments, as the projections package reports it:
// show(done, total) from any worker, in any order. verb says what is done to them ("verified").
// stop ends the display, ok saying whether the work completed; plain lines end with one more.
func Establishments(w io.Writer, o Options, start time.Time, verb string) (show func(done, total int), stop func(ok bool)) {
	var done, total atomic.Int64
	d := Start(w, o, start, View{
		Label: func() string { return fmt.Sprintf("%s %d of %d establishments", verb, done.Load(), total.Load()) },
		Count: done.Load,
		Line: func() string {
			return fmt.Sprintf("%s %d of %d establishments (%.0f/s)", verb, done.Load(), total.Load(), Rate(done.Load(), start))
		},
		LastLine: true,
	})
	var sized sync.Once
	return func(n, t int) {
		total.Store(int64(t))
		// A count reported late by another worker does not take the display back.
		for {
			cur := done.Load()
			if int64(n) <= cur || done.CompareAndSwap(cur, int64(n)) {
				break
			}
		}
		sized.Do(func() { d.SetTotal(int64(t)) })
		d.SetCurrent(done.Load())
	}, d.Stop
}
