package runner

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// store writes the bundle of u, retrying until it is stored or ctx ends, then tells the
// notifier what u announces, a rise of the revision or a transition, with the bucket's sequence
// of the write. It reports false, without error, for a bundle larger than Config.MaxValueSize:
// the establishment keeps its previous bundle until a later change fits.
func (p *Projector) store(ctx context.Context, u projections.Update) (bool, error) {
	b := &u.Bundle
	stored, ok, err := p.put(ctx, dockey.Key(b.Slug), b)
	if !ok || err != nil {
		return false, err
	}
	if len(u.Resources) > 0 {
		c := Change{Slug: b.Slug, Revision: b.Revision, Resources: u.Resources, Unserved: !projections.Served(b),
			Transition: u.Transition, Stored: stored}
		if err := p.notify(ctx, c); err != nil {
			return false, err
		}
	}
	return true, nil
}

// put writes b under key, retrying until it is stored or ctx ends, and returns the bucket's
// sequence of the write. ok is false, without error, for a bundle with a document that is not
// JSON or a string that is not UTF-8, or larger than Config.MaxValueSize, which is logged and not
// stored.
func (p *Projector) put(ctx context.Context, key string, b *dockey.Bundle) (seq uint64, ok bool, err error) {
	if name, ok := allJSON(b); !ok {
		// Render writes JSON; this is the one check of it, here rather than at every read
		// node's every start (dockey.DecodeShared takes the bodies as they are stored).
		p.logger.Error("rendered document is not JSON, previous bundle kept", "key", key,
			"revision", b.Revision, "document", name)
		return 0, false, nil
	}
	projections.Compress(b)
	value, err := dockey.EncodeBundle(b)
	if err != nil {
		p.logger.Error("bundle cannot be encoded, previous bundle kept", "key", key,
			"revision", b.Revision, "error", err)
		return 0, false, nil
	}
	if len(value) > p.cfg.MaxValueSize {
		p.logger.Error("bundle too large, previous bundle kept", "key", key,
			"revision", b.Revision, "bytes", len(value), "max_bytes", p.cfg.MaxValueSize)
		return 0, false, nil
	}
	print := projections.StoredPrint(b)
	err = p.retry(ctx, fmt.Sprintf("store bundle %s at revision %d", key, b.Revision), func() (err error) {
		seq, err = p.cfg.KV.putPrinted(ctx, key, value, print)
		return err
	})
	return seq, err == nil, err
}

// allJSON reports whether every body of b is JSON, and otherwise names a document that is not.
// Bodies equal to one already checked (a menu the same in two languages) are not checked again.
func allJSON(b *dockey.Bundle) (string, bool) {
	var bad *dockey.Document
	var checked [][]byte
	projections.EachDocument(b, func(_ string, d *dockey.Document) {
		if bad != nil || len(d.Body) == 0 || slices.ContainsFunc(checked, func(c []byte) bool { return bytes.Equal(c, d.Body) }) {
			return
		}
		if !events.ValidJSON(d.Body) {
			bad = d
		}
		checked = append(checked, d.Body)
	})
	if bad == nil {
		return "", true
	}
	name := ""
	projections.EachDocument(b, func(n string, d *dockey.Document) {
		if bytes.Equal(d.Body, bad.Body) && name == "" {
			name = n
		}
	})
	return name, false
}
