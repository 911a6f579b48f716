package main

import (
	"bufio"
	"encoding/json"
	"os"

	"github.com/opencarte/publisher/cmd/internal/sample"
)

// generated describes the generated file.
type generated struct {
	bytes                     int64
	minSize, maxSize          int
	dependent, drafts, apiOff int
	zones                     map[string]int
	slugs, dependentSlugs     []string
	dependentZones            []string // the time zone of each of dependentSlugs
}

func generate(o options, path string) (generated, error) {
	f, err := os.Create(path)
	if err != nil {
		return generated{}, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	g := generated{minSize: 1 << 30, zones: map[string]int{}}
	for i := range o.n {
		s := sample.Establishment(o.seed, i, o.today)
		b, err := json.Marshal(s)
		if err != nil {
			return g, err
		}
		g.bytes += int64(len(b))
		g.minSize, g.maxSize = min(g.minSize, len(b)), max(g.maxSize, len(b))
		if sample.DateDependent(s) {
			g.dependent++
		}
		if s.Status == "draft" {
			g.drafts++
		}
		if s.Settings != nil && s.Settings.PublicAPIEnabled != nil && !*s.Settings.PublicAPIEnabled {
			g.apiOff++
		}
		g.zones[s.TimeZone]++
		g.slugs = append(g.slugs, s.Slug)
		if sample.DateDependent(s) {
			g.dependentSlugs = append(g.dependentSlugs, s.Slug)
			g.dependentZones = append(g.dependentZones, s.TimeZone)
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return g, err
	}
	return g, f.Close()
}
