package webhook

import (
	"context"
	"testing"
	"testing/synctest"
)

// An attempt to an endpoint with one in flight waits for it to end; other endpoints do not wait,
// a cancelled wait takes no turn, and an ended turn leaves nothing behind.
func TestTurnsOneAttemptPerEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr turns
		ctx := context.Background()
		first, ok := tr.take(ctx, "a.wh_1")
		if !ok {
			t.Fatal("take on a free endpoint failed")
		}
		other, ok := tr.take(ctx, "b.wh_1")
		if !ok {
			t.Fatal("another endpoint waited for the first one's attempt")
		}
		other()

		took := make(chan func())
		go func() {
			release, _ := tr.take(ctx, "a.wh_1")
			took <- release
		}()
		synctest.Wait()
		select {
		case <-took:
			t.Fatal("a second attempt to one endpoint started while the first was in flight")
		default:
		}

		cctx, cancel := context.WithCancel(ctx)
		gaveUp := make(chan bool)
		go func() {
			_, ok := tr.take(cctx, "a.wh_1")
			gaveUp <- !ok
		}()
		synctest.Wait()
		cancel()
		if !<-gaveUp {
			t.Error("a cancelled wait took the turn")
		}

		first()
		second := <-took
		second()
		if n := len(tr.busy); n != 0 {
			t.Errorf("%d endpoints still busy after every attempt ended", n)
		}
	})
}
