package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"tuxlab/internal/activity"
)

// The warm pool keeps PoolSize started sandboxes per template ready, so that a
// learner's create hands one out instead of waiting for the engine to create
// and start a container. A pooled sandbox is an engine container without a
// row: it belongs to nobody, counts against no quota and no host cap, and
// becomes a learner's when Create writes its engine id into the learner's new
// row. Each process fills its own pool (labelled with the process's owner id),
// so replicas sharing an engine never hand out the same container; a process
// replaces entries older than PoolMaxAge and removes its pool when it stops.
//
// A process that dies (kill -9, a crash, a lost host) cannot remove its pool,
// so every process with a pool keeps a heartbeat: a settings row
// (poolHeartbeatKey) stamped every poolHeartbeat, and deleted once its pool is
// removed on a clean stop. Reconciliation, which runs when a process starts
// and then every reconcile interval, removes the unclaimed pool containers
// whose owner has no heartbeat row or one older than poolOwnerDeadAfter: a
// live replica's pool is left alone, a dead process's goes within a minute or
// two of its death. The rule assumes the replicas' clocks agree to within a
// few seconds (NTP).
//
// Templates with a network are not pooled: their sandboxes join the learner's
// own network, which is not known before the learner asks.

// Pool labels, beside the install's.
const (
	LabelPool        = "org.tuxlab.pool"         // the template id a pooled container was made for
	LabelPoolOwner   = "org.tuxlab.pool-owner"   // the process whose pool it is in
	LabelPoolVersion = "org.tuxlab.pool-version" // the template's version when it was made
	LabelPoolSince   = "org.tuxlab.pool-since"   // when it was made (RFC 3339)
)

// pooled is a ready container, with its first terminal's shell already
// started when that worked (starting a shell is most of what opening a
// terminal costs).
type pooled struct {
	engineID string
	version  string
	since    time.Time
	shell    *terminalSession // nil: the first terminal starts its own
}

// discardShell ends a pooled container's shell stream, for a container that
// is being removed anyway (nothing to reap).
func (e pooled) discardShell() {
	if e.shell != nil {
		e.shell.Session.Close()
	}
}

// unclaimedShellTTL is how long a handed-out sandbox's started shell waits
// for its first terminal. A terminal opened on another replica starts its
// own; this one is then ended with what it started.
const unclaimedShellTTL = 2 * time.Minute

// heldShell is a handed-out sandbox's started shell, until a terminal takes it.
type heldShell struct {
	shell *terminalSession
	timer *time.Timer
}

// pool is the process's warm sandboxes per template id.
type pool struct {
	owner string
	wake  chan struct{}

	mu     sync.Mutex
	ready  map[int64][]pooled
	shells map[string]*heldShell // by engine id
}

func newPool() *pool {
	b := make([]byte, 8)
	rand.Read(b)
	return &pool{owner: hex.EncodeToString(b), wake: make(chan struct{}, 1), ready: map[int64][]pooled{},
		shells: map[string]*heldShell{}}
}

// version identifies a template's settings: a pooled container made before
// an edit is not handed out after it.
func templateVersion(t *Template) string { return strconv.FormatInt(t.UpdatedAt.UnixNano(), 36) }

// poolable reports whether sandboxes of t can be made before anyone asks.
func (s *Service) poolable(t *Template) bool {
	return s.opt.PoolSize > 0 && !t.Network && t.Kind != KindMachine
}

// take hands out a ready container of template t, if the pool has one, and
// wakes the filler to replace it.
func (p *pool) take(t *Template) (pooled, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.poke()
	want, list := templateVersion(t), p.ready[t.ID]
	for i := len(list) - 1; i >= 0; i-- {
		if e := list[i]; e.version == want {
			p.ready[t.ID] = append(list[:i], list[i+1:]...)
			return e, true
		}
	}
	return pooled{}, false // stale entries are the filler's to remove
}

// holdShell keeps a handed-out sandbox's started shell for its first
// terminal, and ends it if none comes within unclaimedShellTTL.
func (p *pool) holdShell(engineID string, sh *terminalSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := &heldShell{shell: sh}
	h.timer = time.AfterFunc(unclaimedShellTTL, func() {
		if p.takeShell(engineID) == sh {
			sh.Close()
		}
	})
	p.shells[engineID] = h
}

// takeShell returns the started shell held for a sandbox, once, or nil.
func (p *pool) takeShell(engineID string) *terminalSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.shells[engineID]
	if h == nil {
		return nil
	}
	delete(p.shells, engineID)
	h.timer.Stop()
	return h.shell
}

// poke wakes the filler without blocking.
func (p *pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// adoptPooled makes a pooled container the sandbox of row c: it checks that
// the container still runs, then marks the row running with the creation's
// activity record, in one transaction. ok is false when the pool had nothing
// usable and the caller must provision.
func (s *Service) adoptPooled(ctx context.Context, rt Runtime, t *Template, c *Container) (engineID string, ok bool, err error) {
	if !s.poolable(t) {
		return "", false, nil
	}
	for {
		e, found := s.pool.take(t)
		if !found {
			s.opt.Observer.PoolTaken(false)
			return "", false, nil
		}
		if st, err := rt.Inspect(ctx, e.engineID); err != nil || !st.Running {
			e.discardShell()
			s.removeEngine(ctx, rt, e.engineID) // died in the pool: try the next
			continue
		}
		if err := s.markRunning(ctx, c, e.engineID); err != nil {
			e.discardShell() // the caller removes the container
			return e.engineID, true, err
		}
		if e.shell != nil {
			s.pool.holdShell(e.engineID, e.shell)
		}
		s.opt.Observer.PoolTaken(true)
		return e.engineID, true, nil
	}
}

// markRunning records that container c runs as engineID, with its activity.
func (s *Service) markRunning(ctx context.Context, c *Container, engineID string) error {
	now := s.now()
	return s.opt.Activity.InTx(ctx, func(ctx context.Context) error {
		_, err := s.store.UpdateContainer(ctx, c.ID, func(c *Container) error {
			c.EngineID = engineID
			c.Status, c.StatusDetail, c.StartedAt, c.StoppedAt, c.LastActivityAt = StatusRunning, "", &now, nil, now
			return nil
		})
		if err != nil {
			return err
		}
		return s.opt.Activity.Record(ctx, &activity.Event{UserID: c.UserID, Kind: activity.SandboxCreated, At: now, SubjectID: c.ID, Title: c.Name})
	})
}

// FillPool brings each poolable template's pool to PoolSize ready
// containers, and removes entries that are stale (template edited or gone)
// or older than PoolMaxAge.
func (s *Service) FillPool(ctx context.Context) error {
	rt, err := s.rt()
	if err != nil {
		return err
	}
	ts, err := s.store.FindTemplates(ctx)
	if err != nil {
		return err
	}
	current := map[int64]*Template{}
	for _, t := range ts {
		if s.poolable(t) {
			current[t.ID] = t
		}
	}
	s.dropStale(ctx, rt, current)
	var errList []error
	for _, t := range current {
		if ok, err := rt.ImageExists(ctx, t.Image); err != nil || !ok {
			continue // the cold path says what is missing
		}
		for s.Warm(t.ID) < s.opt.PoolSize && ctx.Err() == nil {
			if err := s.addPooled(ctx, rt, t); err != nil {
				errList = append(errList, fmt.Errorf("warm pool for template %d: %w", t.ID, err))
				break
			}
		}
	}
	return errors.Join(errList...)
}

// Warm returns how many warm sandboxes of a template are ready to hand out.
func (s *Service) Warm(templateID int64) int {
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	return len(s.pool.ready[templateID])
}

// WarmTotal returns how many warm sandboxes of every template are ready.
func (s *Service) WarmTotal() int {
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	n := 0
	for _, l := range s.pool.ready {
		n += len(l)
	}
	return n
}

// dropStale removes pooled containers whose template changed, went away or
// stopped being poolable, and those past PoolMaxAge.
func (s *Service) dropStale(ctx context.Context, rt Runtime, current map[int64]*Template) {
	now := s.now()
	var drop []pooled
	s.pool.mu.Lock()
	for id, list := range s.pool.ready {
		keep := list[:0]
		for _, e := range list {
			t := current[id]
			if t == nil || e.version != templateVersion(t) || now.Sub(e.since) >= s.opt.PoolMaxAge {
				drop = append(drop, e)
				continue
			}
			keep = append(keep, e)
		}
		s.pool.ready[id] = keep
	}
	s.pool.mu.Unlock()
	for _, e := range drop {
		e.discardShell()
		s.removeEngine(ctx, rt, e.engineID)
	}
}

// addPooled creates and starts one container for t's pool.
func (s *Service) addPooled(ctx context.Context, rt Runtime, t *Template) error {
	now := s.now()
	spec, err := s.engineSpec(ctx, rt, t, &Container{UserID: 0})
	if err != nil {
		return err
	}
	b := make([]byte, 4)
	rand.Read(b)
	spec.Name = fmt.Sprintf("tuxlab-%s-pool-%s", s.instance[:8], hex.EncodeToString(b))
	delete(spec.Labels, LabelContainer)
	delete(spec.Labels, LabelUser)
	spec.Labels[LabelPool] = strconv.FormatInt(t.ID, 10)
	spec.Labels[LabelPoolOwner] = s.pool.owner
	spec.Labels[LabelPoolVersion] = templateVersion(t)
	spec.Labels[LabelPoolSince] = now.Format(time.RFC3339)
	// A stop does not cut the creation short: the engine may finish a
	// creation its caller gave up on, leaving a container whose id nobody
	// knows. Once the id is known, a stop is checked for (by Start).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	id, err := rt.Create(cctx, spec)
	cancel()
	if err != nil {
		return err
	}
	if err := rt.Start(ctx, id); err != nil {
		s.removeEngine(ctx, rt, id)
		return err
	}
	e := pooled{engineID: id, version: templateVersion(t), since: now}
	// The first terminal's shell, at the default size: the terminal resizes it.
	sh, err := s.openShell(ctx, rt, t, &Container{EngineID: id}, 80, 24)
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = sh.awaitSized(wctx)
		cancel()
		if err != nil {
			sh.Session.Close() // the container goes with the pool entry
		}
	}
	if err == nil {
		e.shell = sh
	} else {
		s.opt.Log.Warn("warm pool: could not start a shell ahead; the first terminal will", "engine_id", id, "error", err.Error())
	}
	s.pool.mu.Lock()
	s.pool.ready[t.ID] = append(s.pool.ready[t.ID], e)
	s.pool.mu.Unlock()
	return nil
}

// drainPool removes every container in this process's pool, and ends the
// started shells no terminal has taken yet (with what they started: those
// sandboxes are learners' now).
func (s *Service) drainPool(ctx context.Context) {
	rt, err := s.rt()
	if err != nil {
		return
	}
	s.pool.mu.Lock()
	ready, held := s.pool.ready, s.pool.shells
	s.pool.ready, s.pool.shells = map[int64][]pooled{}, map[string]*heldShell{}
	s.pool.mu.Unlock()
	for _, h := range held {
		h.timer.Stop()
		h.shell.Close()
	}
	for _, list := range ready {
		for _, e := range list {
			e.discardShell()
			s.removeEngine(ctx, rt, e.engineID)
		}
	}
}

// removeEngine removes an engine container that has no row, logging a failure
// (reconciliation removes what is left). The removal outlives ctx: a pool
// entry abandoned because its caller gave up (a shutdown while filling the
// pool, a request that ended) is still removed.
func (s *Service) removeEngine(ctx context.Context, rt Runtime, engineID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := rt.Remove(ctx, engineID); err != nil && !errors.Is(err, ErrGone) {
		s.opt.Log.Warn("could not remove a pooled sandbox; reconciliation will", "engine_id", engineID, "error", err.Error())
	}
}

// How often a process with a warm pool says it is alive, and how long after
// its last heartbeat it is taken for dead.
const (
	poolHeartbeat      = 10 * time.Second
	poolOwnerDeadAfter = 3 * poolHeartbeat
)

// poolHeartbeatKey is the settings key of a pool owner's heartbeat.
func poolHeartbeatKey(owner string) string { return "pool_heartbeat:" + owner }

// beat records that this process, and so its pool, is alive.
func (s *Service) beat(ctx context.Context) {
	if err := s.store.SetSetting(ctx, poolHeartbeatKey(s.pool.owner), s.now().Format(time.RFC3339Nano)); err != nil && ctx.Err() == nil {
		s.opt.Log.Warn("warm pool heartbeat: other processes may take this one's pool for a dead process's", "error", err.Error())
	}
}

// heartbeat beats every poolHeartbeat until ctx ends.
func (s *Service) heartbeat(ctx context.Context) {
	tick := time.NewTicker(poolHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.beat(ctx)
		}
	}
}

// endHeartbeat deletes this process's heartbeat, once its pool is removed.
func (s *Service) endHeartbeat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.store.DeleteSetting(ctx, poolHeartbeatKey(s.pool.owner)); err != nil {
		s.opt.Log.Warn("warm pool heartbeat: could not delete it", "error", err.Error())
	}
}

// poolOwners answers whether the processes owning pool containers are
// alive, asking the store once per owner: this process is; another is when
// its heartbeat is younger than poolOwnerDeadAfter.
type poolOwners struct {
	s     *Service
	alive map[string]bool
}

// isAlive reports whether owner's process is alive.
func (o *poolOwners) isAlive(ctx context.Context, owner string) (bool, error) {
	if owner == o.s.pool.owner {
		return true, nil
	}
	if ok, known := o.alive[owner]; known {
		return ok, nil
	}
	v, err := o.s.store.Setting(ctx, poolHeartbeatKey(owner))
	if err != nil {
		return false, err
	}
	at, perr := time.Parse(time.RFC3339Nano, v)
	ok := owner != "" && perr == nil && o.s.now().Sub(at) < poolOwnerDeadAfter
	o.alive[owner] = ok
	return ok, nil
}

// forgetDead deletes the heartbeat rows of the dead owners met.
func (o *poolOwners) forgetDead(ctx context.Context) {
	for owner, ok := range o.alive {
		if !ok && owner != "" {
			if err := o.s.store.DeleteSetting(ctx, poolHeartbeatKey(owner)); err != nil {
				o.s.opt.Log.Warn("could not delete a dead warm pool's heartbeat", "owner", owner, "error", err.Error())
			}
		}
	}
}

// pooledLeftover reports whether an engine container without a row is a
// pool entry, and whether it is one that no living process will use: its
// owner's heartbeat stopped (see poolHeartbeat). A live owner's entry is
// left alone.
func (s *Service) pooledLeftover(ctx context.Context, owners *poolOwners, in Instance) (pool, leftover bool, err error) {
	if in.Labels[LabelPool] == "" {
		return false, false, nil
	}
	alive, err := owners.isAlive(ctx, in.Labels[LabelPoolOwner])
	return true, !alive, err
}

// runPool keeps the pool filled until ctx ends, then drains it.
func (s *Service) runPool(ctx context.Context) {
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		s.drainPool(ctx)
	}()
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		if err := s.FillPool(ctx); err != nil && ctx.Err() == nil {
			s.opt.Log.Warn("sandbox warm pool", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-s.pool.wake:
		case <-tick.C:
		}
	}
}
