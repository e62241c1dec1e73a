package httpapi

import (
	"context"
	"errors"
	"sync"
	"time"

	"tuxlab/internal/errs"
	"tuxlab/internal/share"
)

// A guest's preview (docs/preview.md, "Invited guests") lasts as long as
// its share: every ticketed request asks share.Live first (previewable),
// and a request still open when the share ends (a WebSocket through the
// preview, a long response) is cut: at once on DELETE on this replica,
// and otherwise at the next check of the share, every guestPreviewCheck
// (a minute).

// guestPreviewCheck is how often an open guest request asks whether its
// share is still live: for an expiry, or a DELETE served by another
// replica. (Longer than apitest.TerminalWait, so that the test of the cut
// on DELETE cannot pass on this check.)
const guestPreviewCheck = time.Minute

// guestPreviews holds the guests' preview requests in progress, by share.
type guestPreviews struct {
	mu sync.Mutex
	m  map[int64]map[*context.CancelFunc]bool
}

// add registers cancel under shareID and returns its removal.
func (g *guestPreviews) add(shareID int64, cancel context.CancelFunc) func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[int64]map[*context.CancelFunc]bool{}
	}
	if g.m[shareID] == nil {
		g.m[shareID] = map[*context.CancelFunc]bool{}
	}
	key := &cancel
	g.m[shareID][key] = true
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.m[shareID], key)
		if len(g.m[shareID]) == 0 {
			delete(g.m, shareID)
		}
	}
}

// end cuts the preview requests of share shareID in progress.
func (g *guestPreviews) end(shareID int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for cancel := range g.m[shareID] {
		(*cancel)()
	}
}

// guardGuestPreview returns ctx for a guest's request through live share
// sh: it is cancelled when the share ends (guestPreviews.end) or a check
// finds it ended, expired or an exam's. stop releases it.
func (s *Server) guardGuestPreview(ctx context.Context, sh *share.Share) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	remove := s.guestPreviews.add(sh.ID, cancel)
	go func() {
		tick := time.NewTicker(guestPreviewCheck)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				// Only a verdict cuts: a database that does not answer
				// for a moment does not.
				_, err := s.shares.Live(ctx, sh.ContainerID, sh.ID)
				if errs.Is(err, errs.NotFound) || errors.Is(err, share.ErrInExam) {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() { remove(); cancel() }
}
