package main

import (
	"context"
	"time"
)

// followImport reads the changes feed's first sync, measuring its rate, then follows the feed;
// and checks that the feed and the platform endpoint hold every establishment as the read API
// serves it after the import.
func (b *bench) followImport(ctx context.Context) error {
	step("changes feed: first sync")
	start := time.Now()
	cursor, n, err := b.svc.syncFeed(ctx, b.feed)
	if err != nil {
		return err
	}
	took := time.Since(start)
	rate := float64(n) / took.Seconds()
	b.r.add("changes feed: first sync of %d establishments in %s: %.0f/s, %.2f of the raw replay rate (%.0f msg/s)",
		n, took.Round(time.Millisecond), rate, rate/b.raw.replay, b.raw.replay)
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.stopFollow = cancel
	go b.svc.followFeed(fctx, cursor, b.feed, &b.polls)
	if err := b.checkChannels(ctx, "after the import", true); err != nil {
		return err
	}
	sizes, entries, last := b.platform.deliveries()
	b.r.add("platform webhook over the import: %d deliveries, bytes %s, establishments %s (min/median/max), the last %s after the import was projected",
		len(sizes), spread(sizes), spread(entries), sinceText(last, b.imported))
	return nil
}

// followDay checks the platform endpoint's deliveries of the day change, and that both channels
// hold every establishment as the read API serves it.
func (b *bench) followDay(ctx context.Context) error {
	if err := b.checkChannels(ctx, "after the day change", false); err != nil {
		return err
	}
	sizes, entries, last := b.platform.deliveries()
	b.r.add("platform webhook over the day change: %d deliveries, bytes %s, establishments %s (min/median/max); the last %s after the day change was projected (window %s)",
		len(sizes), spread(sizes), spread(entries), sinceText(last, b.projected), window)
	return nil
}

// checkChannels reads every establishment through the read API and waits, up to the window and
// two minutes, until the feed's follower and the platform endpoint hold them all as served.
func (b *bench) checkChannels(ctx context.Context, when string, feedAll bool) error {
	step("checking the platform channels " + when)
	served, err := b.svc.served(ctx, b.file+".results")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(window + 2*time.Minute)
	var feedOff, platformOff int
	for {
		feedOff, platformOff = b.feed.mismatch(served, feedAll), b.platform.mismatch(served, false)
		if feedOff == 0 && platformOff == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	b.r.add("channels %s: %d establishments read through the read API; the changes feed holds %d otherwise (%d entries that would have gone back, %d long polls answered), the platform endpoint %d otherwise (%d that would have gone back)",
		when, len(served), feedOff, b.feed.backs(), b.polls.Load(), platformOff, b.platform.backs())
	return nil
}
