package main

import (
	"context"
	"strings"
	"time"
)

// startPlatform registers the receiver's platform endpoint, for every establishment, before any
// exists.
func (b *bench) startPlatform(ctx context.Context) error {
	b.platform, b.feed = newFollower(), newFollower()
	verifier, err := b.svc.registerPlatform(ctx, strings.TrimSuffix(b.hooks.url, "/hook")+"/platform")
	if err != nil {
		return err
	}
	b.platform.verifier = verifier
	b.hooks.platform = b.platform
	return nil
}

// followImport reads the changes feed's first sync, measuring its rate, then follows the feed;
// and checks that the feed and the platform endpoint hold every establishment as the read API
// serves it after the import.
func (b *bench) followImport(ctx context.Context) error {
	step("changes feed: first sync")
	b.feed.take()
	start := time.Now()
	cursor, n, err := b.svc.syncFeed(ctx, b.feed)
	if err != nil {
		return err
	}
	took := time.Since(start)
	pages := b.feed.take()
	rate := float64(n) / took.Seconds()
	b.r.add("changes feed: first sync of %d establishments in %s, %d pages of bytes %s (min/median/max): %.0f/s, %.2f of the raw replay rate (%.0f msg/s)",
		n, took.Round(time.Millisecond), len(pages.sizes), spread(pages.sizes), rate, rate/b.raw.replay, b.raw.replay)
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.stopFollow = cancel
	go b.svc.followFeed(fctx, cursor, b.feed, &b.polls, &b.failed)
	if err := b.checkChannels(ctx, "after the import", true); err != nil {
		return err
	}
	seq, at, err := b.svc.lastSignal(ctx)
	if err != nil {
		return err
	}
	b.platformFigures("the import", b.imported, seq, at)
	b.destinationFigures(ctx, "the import", at)
	return nil
}

// followDay checks that both channels hold every establishment as the read API serves it after
// the day change, and what each received of it.
func (b *bench) followDay(ctx context.Context) error {
	if err := b.checkChannels(ctx, "after the day change", false); err != nil {
		return err
	}
	seq, at, err := b.svc.lastSignal(ctx)
	if err != nil {
		return err
	}
	got := b.feed.take()
	b.r.add("changes feed over the day change: %d entries in %d pages, bytes %s, establishments %s (min/median/max); %d requests failed while the service restarted; its cursor reached the last change signal (%d of %d) %s after it was stored, %s after the restart",
		total(got.entries), len(got.sizes), spread(got.sizes), spread(got.entries), b.failed.Load(), got.position, seq,
		sinceText(got.reached, at), sinceText(got.reached, b.restarted))
	b.platformFigures("the day change", b.projected, seq, at)
	b.destinationFigures(ctx, "the day change", at)
	return nil
}

// platformFigures prints what the platform endpoint received since the last figures, against
// the last change signal, seq stored at at.
func (b *bench) platformFigures(what string, projected time.Time, seq uint64, at time.Time) {
	got := b.platform.take()
	b.r.add("platform webhook over %s: %d deliveries (%d refused: signature or type), bytes %s, establishments %s (min/median/max), %d entries in all; the last %s after the last change signal was stored, %s after %s was projected (window %s); its cursor at %d of %d",
		what, len(got.sizes), got.refused, spread(got.sizes), spread(got.entries), total(got.entries),
		sinceText(got.last, at), sinceText(got.last, projected), what, window, got.position, seq)
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
	var feedOff, platformOff, kafkaOff int
	for {
		feedOff, platformOff, kafkaOff = b.feed.mismatch(served, feedAll), b.platform.mismatch(served, false), b.dest.state.mismatch(served, false)
		if feedOff == 0 && platformOff == 0 && kafkaOff == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	b.r.add("channels %s: %d establishments read through the read API; the changes feed holds %d otherwise (%d entries that would have gone back, %d long polls answered), the platform endpoint %d otherwise (%d that would have gone back), the kafka destination's consumer %d otherwise (%d that would have gone back)",
		when, len(served), feedOff, b.feed.backs(), b.polls.Load(), platformOff, b.platform.backs(), kafkaOff, b.dest.state.backs())
	return nil
}

// rebuildFigures prints what the platform endpoint and the changes feed received since the
// rebuild started.
func (b *bench) rebuildFigures() {
	platform, feed := b.platform.take(), b.feed.take()
	b.r.add("platform channels over the rebuild: %d platform deliveries (%d entries), %d entries of the changes feed (the documents unchanged: none expected)",
		len(platform.sizes), total(platform.entries), total(feed.entries))
}
