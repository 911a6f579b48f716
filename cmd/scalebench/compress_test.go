package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/opencarte/publisher/cmd/internal/sample"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// sampleBodies returns the document bodies of n generated establishments, as the projector
// renders them (each body once per bundle, as Compress codes it).
func sampleBodies(tb testing.TB, n int) [][]byte {
	tb.Helper()
	today := domain.LocalDate{Year: 2026, Month: 11, Day: 24}
	var bodies [][]byte
	for i := range n {
		s := sample.Establishment(1, i, today)
		e := domain.New(domain.Slug(s.Slug))
		res, err := e.Import(s, domain.NewAPIKey([32]byte{1}))
		if err != nil {
			tb.Fatal(err)
		}
		for _, ev := range append(res.Events, domain.DayStarted{Date: today}) {
			e.Apply(ev)
		}
		b := projections.Render(e, 1)
		var seen [][]byte
		projections.EachDocument(&b, func(_ string, d *dockey.Document) {
			for _, s := range seen {
				if bytes.Equal(s, d.Body) {
					return
				}
			}
			if len(d.Body) > 0 {
				seen = append(seen, d.Body)
			}
		})
		bodies = append(bodies, seen...)
	}
	return bodies
}

// BenchmarkCompressLevels codes the documents of 200 generated establishments at each gzip
// level of klauspost/compress, reporting the CPU per kilobyte of documents and the bytes saved.
func BenchmarkCompressLevels(b *testing.B) {
	bodies := sampleBodies(b, 200)
	in := 0
	for _, body := range bodies {
		in += len(body)
	}
	for _, level := range []int{gzip.DefaultCompression, gzip.HuffmanOnly, gzip.StatelessCompression, 1, 2, 3, 4, 5, 6, 7, 9} {
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			out := compressAll(b, level, bodies)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(in)*1024, "ns/KiB")
			b.ReportMetric(float64(out)/float64(in), "ratio")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(in-out)*1024, "ns/KiB-saved")
		})
	}
}

// BenchmarkCompressBySize codes the documents of 200 generated establishments at gzip's fastest
// level, by size of body, reporting each size's share of the documents and of the CPU, and the
// bytes it saves: whether small bodies are worth compressing at all.
func BenchmarkCompressBySize(b *testing.B) {
	bodies := sampleBodies(b, 200)
	bounds := []int{512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 1 << 30}
	total := 0
	for _, body := range bodies {
		total += len(body)
	}
	low := 0
	for _, high := range bounds {
		var group [][]byte
		in := 0
		for _, body := range bodies {
			if len(body) >= low && len(body) < high {
				group = append(group, body)
				in += len(body)
			}
		}
		name := fmt.Sprintf("below=%d", high)
		low = high
		if len(group) == 0 {
			continue
		}
		b.Run(name, func(b *testing.B) {
			out := compressAll(b, gzip.BestSpeed, group)
			b.ReportMetric(float64(len(group))/float64(len(bodies)), "docs-share")
			b.ReportMetric(float64(in)/float64(total), "bytes-share")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(group)), "ns/doc")
			b.ReportMetric(float64(out)/float64(in), "ratio")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(in-out)*1024, "ns/KiB-saved")
		})
	}
}

// compressAll codes every body at level in each round of b's loop and returns the bytes the last
// round wrote.
func compressAll(b *testing.B, level int, bodies [][]byte) (out int) {
	zw, err := gzip.NewWriterLevel(nil, level)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	for b.Loop() {
		out = 0
		for _, body := range bodies {
			buf.Reset()
			zw.Reset(&buf)
			_, _ = zw.Write(body)
			_ = zw.Close()
			out += buf.Len()
		}
	}
	return out
}
