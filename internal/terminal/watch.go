package terminal

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/errs"
)

// Shared terminals (docs/terminal.md, "Shared terminals"): guests watch an
// owner's terminal through a share. A guest's socket gets the output kept,
// then the live output; what it types reaches the shell only while its share
// lets it type; its resizes are ignored (the owner's size rules).

// MaxWatchersPerShare is how many guests may watch through one share at once.
const MaxWatchersPerShare = 5

// guestQueue is how many output frames wait for a guest; a guest that falls
// further behind is dropped rather than hold the owner's output.
const guestQueue = 256

// ErrNoTerminal is why a guest cannot watch: the owner has no terminal open
// on the sandbox.
var ErrNoTerminal = errs.E(errs.Conflict, "No terminal is open on this sandbox: the owner must open one first")

// ErrTooManyWatchers refuses a guest past MaxWatchersPerShare.
var ErrTooManyWatchers = errs.Errorf(errs.Conflict, "Too many people watch through this share (at most %d)", MaxWatchersPerShare)

// Guest is someone who watches a shared terminal.
type Guest struct {
	ShareID int64
	Name    string // shown to the owner
	Owner   string // the owner's name, shown to the guest
	// Typing: the guest's input reaches the shell (a "write" share whose
	// owner allowed typing). Bridge.SetTyping changes it while it watches.
	Typing bool
	// Until is when the share expires: the guest's socket closes then.
	Until time.Time
	// Check tells, every PingInterval, whether the guest still may watch
	// and type (the share still exists, the guest may still sign in); an
	// error closes the guest's socket with that reason.
	Check func(ctx context.Context) (typing bool, err error)
}

// Watcher is a guest watching now, as the owner sees it.
type Watcher struct {
	ShareID int64  `json:"share_id"`
	Name    string `json:"name"`
	Typing  bool   `json:"typing"`
}

// guest is one guest's socket on a term.
type guest struct {
	Guest
	conn *websocket.Conn
	out  chan []byte // output for the guest, in order
	mu   sync.Mutex
	stop chan struct{} // closed once the guest must leave
	why  string        // the close reason, set before stop closes
	once sync.Once
}

func (g *guest) typing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.Typing
}

func (g *guest) setTyping(on bool) {
	g.mu.Lock()
	g.Typing = on
	g.mu.Unlock()
}

// leave makes the guest's socket close with reason why (the first wins).
func (g *guest) leave(why string) {
	g.once.Do(func() {
		g.why = why
		close(g.stop)
	})
}

// feedGuests queues output p for every guest; the caller holds t.mu, so a
// guest gets the output in the order it was kept, after its replay.
func (t *term) feedGuests(p []byte) {
	if len(t.guests) == 0 {
		return
	}
	b := append([]byte(nil), p...)
	for g := range t.guests {
		select {
		case g.out <- b:
		default:
			g.leave("Your connection is too slow to follow the terminal")
		}
	}
}

// watchers lists the guests watching t now.
func (t *term) watchers() []Watcher {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Watcher, 0, len(t.guests))
	for g := range t.guests {
		out = append(out, Watcher{ShareID: g.ShareID, Name: g.Name, Typing: g.typing()})
	}
	return out
}

// announceWatchers tells the owner's socket who watches, apart from the
// caller: a slow owner holds no guest.
func (t *term) announceWatchers() {
	ws := t.watchers()
	go t.sendControl(control{Type: "watchers", Watchers: ws})
}

// latestOf picks the owner's terminal on sandboxID that a socket attached to
// last; the caller holds b.mu.
func (b *Bridge) latestOf(ownerID, sandboxID int64) *term {
	var best *term
	var at time.Time
	for _, t := range b.reg.user(ownerID) {
		if t.sandboxID != sandboxID {
			continue
		}
		t.mu.Lock()
		a, over := t.attachedAt, t.over
		t.mu.Unlock()
		if !over && (best == nil || a.After(at)) {
			best, at = t, a
		}
	}
	return best
}

// terms is every terminal served now.
func (b *Bridge) terms() []*term {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.all()
}

// eachGuest runs f on every guest of share shareID.
func (b *Bridge) eachGuest(shareID int64, f func(t *term, g *guest)) {
	for _, t := range b.terms() {
		t.mu.Lock()
		var gs []*guest
		for g := range t.guests {
			if g.ShareID == shareID {
				gs = append(gs, g)
			}
		}
		t.mu.Unlock()
		for _, g := range gs {
			f(t, g)
		}
	}
}

// Watchers lists who watches through share shareID now.
func (b *Bridge) Watchers(shareID int64) []Watcher {
	out := []Watcher{}
	b.eachGuest(shareID, func(_ *term, g *guest) {
		out = append(out, Watcher{ShareID: g.ShareID, Name: g.Name, Typing: g.typing()})
	})
	return out
}

// SetTyping lets the guests of share shareID type, or stops them, at once.
func (b *Bridge) SetTyping(shareID int64, on bool) {
	touched := map[*term]bool{}
	b.eachGuest(shareID, func(t *term, g *guest) {
		g.setTyping(on)
		touched[t] = true
		go g.sendControl(control{Type: "typing", Typing: &on})
	})
	for t := range touched {
		t.announceWatchers()
	}
}

// EndShare closes the sockets of the guests of share shareID at once, with
// reason why.
func (b *Bridge) EndShare(shareID int64, why string) {
	b.eachGuest(shareID, func(_ *term, g *guest) { g.leave(why) })
}

func (g *guest) sendControl(m control) error {
	b, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return g.conn.Write(ctx, websocket.MessageText, b)
}

// Watch serves conn as guest g of the owner's terminal on sandbox sandboxID
// (the one a socket attached to last) until the guest leaves, the share
// ends (EndShare, Until, Check) or the terminal ends. It returns
// ErrNoTerminal, leaving conn alone, when the owner has no terminal open
// there, and ErrTooManyWatchers past the share's limit.
func (b *Bridge) Watch(ctx context.Context, conn *websocket.Conn, ownerID, sandboxID int64, g Guest) error {
	b.mu.Lock()
	t := b.latestOf(ownerID, sandboxID)
	b.mu.Unlock()
	if t == nil {
		return ErrNoTerminal
	}
	conn.SetReadLimit(b.opt.MaxMessage)
	gu := &guest{Guest: g, conn: conn, out: make(chan []byte, guestQueue), stop: make(chan struct{})}
	t.mu.Lock()
	n := 0
	for o := range t.guests {
		if o.ShareID == g.ShareID {
			n++
		}
	}
	if t.over {
		t.mu.Unlock()
		return ErrNoTerminal
	}
	if n >= MaxWatchersPerShare {
		t.mu.Unlock()
		return ErrTooManyWatchers
	}
	if t.guests == nil {
		t.guests = map[*guest]bool{}
	}
	t.guests[gu] = true
	kept := t.out.Bytes()
	t.mu.Unlock()
	t.announceWatchers()
	defer func() {
		t.mu.Lock()
		delete(t.guests, gu)
		t.mu.Unlock()
		t.announceWatchers()
	}()
	t.serveGuest(ctx, gu, kept, sandboxID)
	return nil
}

// serveGuest writes the hello (with the sandbox's id, for the guest's
// preview), the replay and the live output to guest g, reads its frames,
// and closes its socket once it must leave.
func (t *term) serveGuest(ctx context.Context, g *guest, kept []byte, sandboxID int64) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	typing := g.typing()
	if g.sendControl(control{Type: "watching", Owner: g.Owner, Typing: &typing, ContainerID: sandboxID}) != nil {
		return
	}
	for len(kept) > 0 {
		n := min(len(kept), replayFrame)
		if g.conn.Write(ctx, websocket.MessageBinary, kept[:n]) != nil {
			return
		}
		kept = kept[n:]
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		t.guestInput(ctx, g)
		g.leave("")
	})
	wg.Go(func() { t.guestChecks(ctx, g) })
	t.guestOutput(ctx, g)
	why := g.why
	if why == "" {
		why = "closed"
	}
	// Close before cancel: a read cancelled by its context drops the
	// connection without a close frame, and the guest must read the reason.
	g.conn.Close(websocket.StatusNormalClosure, closeReason(why))
	cancel()
	wg.Wait()
	g.conn.CloseNow()
}

// guestOutput writes the live output to g until it must leave or the
// terminal ends.
func (t *term) guestOutput(ctx context.Context, g *guest) {
	for {
		select {
		case b := <-g.out:
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := g.conn.Write(wctx, websocket.MessageBinary, b)
			cancel()
			if err != nil {
				g.leave("")
				return
			}
		case <-g.stop:
			return
		case <-t.ending:
			g.leave("The terminal ended")
			return
		case <-ctx.Done():
			g.leave("")
			return
		}
	}
}

// guestInput reads g's frames: input reaches the shell only while g may
// type; resizes are ignored; a close message leaves.
func (t *term) guestInput(ctx context.Context, g *guest) {
	noted := false
	for {
		typ, data, err := g.conn.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			if !g.typing() {
				if !noted { // once until typing is allowed: a held key sends many frames
					noted = true
					go g.sendControl(control{Type: "error", Detail: "Read-only: the owner has not let you type"})
				}
				continue
			}
			noted = false
			if _, err := t.sess.Write(data); err != nil {
				return
			}
			continue
		}
		var m control
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if m.Type == "close" {
			return
		}
	}
}

// guestChecks checks g's share at once, then pings g and checks again every
// PingInterval, and makes it leave when the share expires.
func (t *term) guestChecks(ctx context.Context, g *guest) {
	tick := time.NewTicker(t.b.opt.PingInterval)
	defer tick.Stop()
	var expire <-chan time.Time
	if !g.Until.IsZero() {
		tm := time.NewTimer(max(g.Until.Sub(t.b.opt.Now()), 0))
		defer tm.Stop()
		expire = tm.C
	}
	// The first check runs at once: a share ended between the guest's
	// admission and its joining the terminal (EndShare found no guest yet)
	// closes it now rather than at the next ping.
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-expire:
				g.leave("The share expired")
				return
			case <-tick.C:
			}
			pctx, cancel := context.WithTimeout(ctx, t.b.opt.PingInterval)
			err := g.conn.Ping(pctx)
			cancel()
			if err != nil {
				g.leave("")
				return
			}
		}
		if g.Check == nil {
			continue
		}
		typing, err := g.Check(ctx)
		if err != nil {
			_, detail := t.b.opt.Describe(err)
			g.leave(detail)
			return
		}
		if typing != g.typing() {
			g.setTyping(typing)
			go g.sendControl(control{Type: "typing", Typing: &typing})
			t.announceWatchers()
		}
	}
}
