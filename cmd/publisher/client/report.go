package client

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Result is the line printed on stdout for an accepted document.
type Result struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Slug    string `json:"slug"`
	Status  string `json:"status"` // created, updated, unchanged or duplicate
	Version uint64 `json:"version"`
	APIKey  string `json:"api_key,omitempty"`
}

// report prints the outcome of each document of a batch: accepted ones on stdout, refused ones
// on stderr.
func (im *Importer) report(b *batch) {
	var out, msgs bytes.Buffer
	for i := range b.items {
		im.reportItem(&b.items[i], b.err, &out, &msgs)
	}
	if out.Len() > 0 {
		im.writeResults(out.Bytes(), &msgs)
	}
	if msgs.Len() > 0 {
		im.msgs.Write(msgs.Bytes())
	}
	im.shown.SetCurrent(im.stats.doneBytes.Add(b.bytes))
}

// reportItem adds the outcome of one document to out, its result line if it was accepted, or to
// msgs; stopped is why the run stopped, if it did.
func (im *Importer) reportItem(it *item, stopped error, out, msgs *bytes.Buffer) {
	s := &im.stats
	where := im.where(it.at)
	switch {
	case it.local != "":
		s.refused.Add(1)
		fmt.Fprintf(msgs, "%s: %s\n", where, it.local)
	case !it.done && stopped != nil:
		// Not imported: the run stopped; the summary counts these.
	case !it.done || it.answer == nil:
		s.refused.Add(1)
		fmt.Fprintf(msgs, "%s: the server gave no answer for this document\n", where)
	case it.answer.Status < 200 || it.answer.Status > 299 || it.answer.Result == nil:
		s.refused.Add(1)
		msgs.WriteString(refusal(where, it.slug, it.answer))
	default:
		r := im.accepted(it)
		line, _ := json.Marshal(r)
		out.Write(append(line, '\n'))
		if it.uncertain {
			s.lost.Add(1)
			fmt.Fprintf(msgs, "%s: slug %q: answered as a duplicate after a try whose answer was lost: if that try issued an API key, the key cannot be shown again; to issue a new one: publisher admin regenerate-key %s\n", where, r.Slug, r.Slug)
		}
	}
}

// accepted is the result of a document the server accepted, counted by its status.
func (im *Importer) accepted(it *item) Result {
	s, a := &im.stats, it.answer
	r := Result{File: im.inputs[it.at.input].name, Line: it.at.line, Slug: cmp.Or(a.Slug, it.slug), Version: a.Result.Version, APIKey: a.APIKey}
	switch {
	case a.Result.Duplicate:
		r.Status = "duplicate"
		s.duplicate.Add(1)
	case a.Result.Created || a.Status == http.StatusCreated:
		r.Status = "created"
		s.created.Add(1)
	case a.Result.Events == 0:
		r.Status = "unchanged"
		s.unchanged.Add(1)
	default:
		r.Status = "updated"
		s.updated.Add(1)
	}
	return r
}

// writeResults writes result lines on stdout. Once stdout failed, the run stops, and results go
// to msgs: the API keys they hold are shown nowhere else.
func (im *Importer) writeResults(lines []byte, msgs *bytes.Buffer) {
	if im.outErr == nil {
		if _, err := im.stdout.Write(lines); err != nil {
			im.outErr = err
			im.cancel(fmt.Errorf("writing the results: %w", err))
		}
	}
	if im.outErr != nil {
		fmt.Fprintf(msgs, "import: could not write to stdout (%v); the results follow here\n%s", im.outErr, lines)
	}
}

// refusal is the line naming a refused document and why.
func refusal(where, slug string, a *lineAnswer) string {
	var sb strings.Builder
	sb.WriteString(where + ": ")
	if s := cmp.Or(a.Slug, slug); s != "" {
		fmt.Fprintf(&sb, "slug %q: ", s)
	}
	fmt.Fprintf(&sb, "%d %s", a.Status, cmp.Or(a.Error, http.StatusText(a.Status)))
	if len(a.Details) > 0 {
		sb.WriteString(": " + strings.Join(a.Details, "; "))
	}
	sb.WriteString("\n")
	return sb.String()
}
