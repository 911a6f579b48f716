package progress

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// View says what a display shows. Its functions are called while the display draws, from another
// goroutine: they read counts that the work updates meanwhile.
type View struct {
	Label func() string // before the bar: what is done so far
	Count func() int64  // what is done, for the rate after the bar
	Line  func() string // a plain line
	// LastLine ends plain lines with one more when the display stops, so that the last count
	// shows whatever the interval.
	LastLine bool
	// Total is the bar's length in the unit of SetCurrent: 0 until SetTotal gives it; -1 when it
	// is never known, for a spinner without percentage nor time left. A total given does not
	// complete the bar when the work turns out larger than it was: only Stop does.
	Total int64
}

// Display is a progress display under way.
type Display struct {
	msgs  io.Writer
	bar   *mpb.Bar      // nil unless a bar is drawn
	p     *mpb.Progress // the bar's container
	plain func()        // stops the plain lines
}

// Start starts showing v on w as o says, the work having started at start.
func Start(w io.Writer, o Options, start time.Time, v View) *Display {
	locked := &lockedWriter{w: w}
	d := &Display{msgs: locked, plain: func() {}}
	switch o.mode(w) {
	case "plain":
		stop := printEvery(locked, o.Every, v.Line)
		d.plain = func() {
			stop()
			if v.LastLine {
				fmt.Fprintln(locked, v.Line())
			}
		}
	case "bar":
		d.startBar(w, start, v)
	}
	return d
}

// startBar draws v as a bar labelled with what is done and its rate. Messages are written above
// it.
func (d *Display) startBar(w io.Writer, start time.Time, v View) {
	d.p = mpb.New(mpb.WithOutput(w), mpb.WithAutoRefresh(), mpb.ContainerOptional(mpb.ForceTTY(), true))
	label := decor.Any(func(decor.Statistics) string { return v.Label() }, decor.WCSyncSpaceR)
	speed := decor.Any(func(decor.Statistics) string { return fmt.Sprintf("%.0f/s", Rate(v.Count(), start)) }, decor.WCSyncSpace)
	if v.Total < 0 {
		d.bar = d.p.New(0, mpb.SpinnerStyle().PositionLeft(), mpb.BarWidth(2), mpb.PrependDecorators(label), mpb.AppendDecorators(speed))
	} else {
		d.bar = d.p.New(0, mpb.BarStyle(),
			mpb.PrependDecorators(label),
			mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), speed,
				decor.OnComplete(decor.Name("ETA", decor.WC{C: decor.DextraSpace}), ""),
				decor.OnComplete(decor.NewAverageETA(decor.ET_STYLE_GO, start, nil, decor.WC{C: decor.DextraSpace}), "done")))
		if v.Total > 0 {
			d.bar.SetTotal(v.Total, false)
		}
	}
	d.msgs = d.p
}

// Messages is the writer of the messages shown while the display runs: above the bar, or between
// the plain lines.
func (d *Display) Messages() io.Writer { return d.msgs }

// SetTotal gives the bar its length, once known.
func (d *Display) SetTotal(n int64) {
	if d.bar != nil {
		d.bar.SetTotal(n, false)
	}
}

// SetCurrent moves the bar to n.
func (d *Display) SetCurrent(n int64) {
	if d.bar != nil {
		d.bar.SetCurrent(n)
	}
}

// Stop ends the display; complete says whether the work completed, which fills the bar, or not,
// which leaves it where it stopped. Nothing is drawn once it returns.
func (d *Display) Stop(complete bool) {
	d.plain()
	if d.bar == nil {
		return
	}
	if complete {
		d.bar.SetTotal(-1, true)
	} else {
		d.bar.Abort(false)
	}
	d.p.Wait()
}

// Rate is n per second since a time, 0 before any time passed.
func Rate(n int64, since time.Time) float64 {
	secs := time.Since(since).Seconds()
	if secs <= 0 {
		return 0
	}
	return float64(n) / secs
}

// printEvery writes line() to w, as a line, every interval until the function it returns is
// called; that function returns once no more line is written.
func printEvery(w io.Writer, every time.Duration, line func() string) (stop func()) {
	tick := time.NewTicker(every)
	quit, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-tick.C:
				fmt.Fprintln(w, line())
			case <-quit:
				return
			}
		}
	}()
	return func() {
		tick.Stop()
		close(quit)
		<-ended
	}
}

// lockedWriter serializes the writes of the plain lines and of the messages written meanwhile.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
