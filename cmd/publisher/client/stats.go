package client

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/progress"
)

// importStats counts documents as they are read and answered; the progress reads it meanwhile.
type importStats struct {
	read                                   atomic.Int64
	created, updated, unchanged, duplicate atomic.Int64
	refused                                atomic.Int64
	lost                                   atomic.Int64 // duplicates answered after a lost answer
	doneBytes                              atomic.Int64 // input bytes whose documents are reported
}

func (s *importStats) accepted() int64 {
	return s.created.Load() + s.updated.Load() + s.unchanged.Load() + s.duplicate.Load()
}

// handled is how many documents have an outcome, accepted or refused.
func (s *importStats) handled() int64 { return s.accepted() + s.refused.Load() }

// summary prints the counts on stderr and returns the command's error, if anything went wrong.
func (im *Importer) summary(elapsed time.Duration, fatal error, unreadable int) error {
	s := &im.stats
	read, refused := s.read.Load(), s.refused.Load()
	missing := read - s.handled()
	var notes strings.Builder
	if missing > 0 {
		fmt.Fprintf(&notes, ", %d not imported", missing)
	}
	if n := s.lost.Load(); n > 0 {
		fmt.Fprintf(&notes, ", %d answered after a lost answer (see above)", n)
	}
	rate := 0.0
	if secs := elapsed.Seconds(); secs > 0 {
		rate = float64(s.handled()) / secs
	}
	fmt.Fprintf(im.stderr, "import: %d documents read: %d accepted (%d created, %d updated, %d unchanged, %d duplicate), %d refused%s; %s, %.1f documents/s\n",
		read, s.accepted(), s.created.Load(), s.updated.Load(), s.unchanged.Load(), s.duplicate.Load(), refused, notes.String(),
		elapsed.Round(time.Millisecond), rate)

	var problems []string
	if fatal != nil {
		problems = append(problems, fmt.Sprintf("%v; %d of %d documents not imported", fatal, missing, read))
	}
	if refused > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d documents refused", refused, read))
	}
	if unreadable > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d inputs could not be read to their end", unreadable, len(im.inputs)))
	}
	if problems == nil {
		return nil
	}
	return errors.New("import: " + strings.Join(problems, "; "))
}

// startProgress shows the progress on stderr as --progress says: a bar whose length is the
// input's bytes, so its time left holds for documents of any size, labelled with the documents
// handled and their rate, or a plain line every --progress-every. total is the input's bytes, -1
// when unknown.
func (im *Importer) startProgress(total int64, start time.Time) *progress.Display {
	s := &im.stats
	return progress.Start(im.stderr, im.cfg.Progress, start, progress.View{
		Label: func() string {
			text := fmt.Sprintf("%d documents", s.handled())
			if n := s.refused.Load(); n > 0 {
				text += fmt.Sprintf(", %d refused", n)
			}
			return text
		},
		Count: s.handled,
		Line:  func() string { return im.progressLine(total, start) },
		Total: total,
	})
}

// progressLine is a plain progress line, for logs.
func (im *Importer) progressLine(total int64, start time.Time) string {
	s := &im.stats
	line := fmt.Sprintf("imported %d documents (%.0f/s), refused %d", s.accepted(), progress.Rate(s.handled(), start), s.refused.Load())
	if total > 0 {
		line += fmt.Sprintf(", %d%% of input", s.doneBytes.Load()*100/total)
	}
	return line
}
