package client

import (
	"context"
	"errors"
	"sync"
)

// pipeline carries the batches cut from the inputs to the workers that send them, and from them
// to the collector that reports them in input order. Besides the batch being filled, at most
// twice ImportConfig.Parallel batches exist at once: a batch takes a slot of that window when it
// is handed over, and frees it once reported.
type pipeline struct {
	stop      context.Context // done once the run stopped
	slots     chan struct{}
	todo      chan *batch // to send
	done      chan *batch // sent, to report
	workers   sync.WaitGroup
	collected chan struct{} // closed once every batch is reported
}

// startPipeline starts the workers and the collector. A request is sent under ctx; stop ends
// the run, and a failure that would recur for every batch stops it.
func (im *Importer) startPipeline(ctx, stop context.Context) *pipeline {
	window := 2 * im.cfg.Parallel
	p := &pipeline{
		stop: stop, slots: make(chan struct{}, window), collected: make(chan struct{}),
		todo: make(chan *batch, window), done: make(chan *batch, window),
	}
	for range im.cfg.Parallel {
		p.workers.Go(func() {
			for b := range p.todo {
				if err := im.send(ctx, stop, b); err != nil {
					b.err = err
					if !errors.Is(err, errStopped) {
						im.cancel(err)
					}
				}
				p.done <- b
			}
		})
	}
	go func() {
		defer close(p.collected)
		im.collect(p.done, p.slots)
	}()
	return p
}

// emit hands a batch to the workers once the window has room for it; false when the run stopped
// first.
func (p *pipeline) emit(b *batch) bool {
	if p.stop.Err() != nil {
		return false
	}
	select {
	case p.slots <- struct{}{}:
	case <-p.stop.Done():
		return false
	}
	p.todo <- b
	return true
}

// close waits until every batch handed over is sent and reported.
func (p *pipeline) close() {
	close(p.todo)
	p.workers.Wait()
	close(p.done)
	<-p.collected
}

// collect reports the batches in the order they were read, whatever the order they are answered
// in, freeing a slot of the window for each.
func (im *Importer) collect(done <-chan *batch, slots <-chan struct{}) {
	waiting := map[int]*batch{}
	next := 0
	for b := range done {
		waiting[b.seq] = b
		for {
			b, ok := waiting[next]
			if !ok {
				break
			}
			delete(waiting, next)
			next++
			im.report(b)
			<-slots
		}
	}
}
