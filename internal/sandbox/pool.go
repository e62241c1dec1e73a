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
// replaces entries older than PoolMaxAge and removes its pool when it stops,
// and any process's reconciliation removes pool containers older than twice
// that age, which only a process that died could leave behind.
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

// pooled is a ready container.
type pooled struct {
	engineID string
	version  string
	since    time.Time
}

// pool is the process's warm sandboxes per template id.
type pool struct {
	owner string
	wake  chan struct{}

	mu    sync.Mutex
	ready map[int64][]pooled
}

func newPool() *pool {
	b := make([]byte, 8)
	rand.Read(b)
	return &pool{owner: hex.EncodeToString(b), wake: make(chan struct{}, 1), ready: map[int64][]pooled{}}
}

// version identifies a template's settings: a pooled container made before
// an edit is not handed out after it.
func templateVersion(t *Template) string { return strconv.FormatInt(t.UpdatedAt.UnixNano(), 36) }

// poolable reports whether sandboxes of t can be made before anyone asks.
func (s *Service) poolable(t *Template) bool { return s.opt.PoolSize > 0 && !t.Network }

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
			return "", false, nil
		}
		if st, err := rt.Inspect(ctx, e.engineID); err != nil || !st.Running {
			s.removeEngine(ctx, rt, e.engineID) // died in the pool: try the next
			continue
		}
		return e.engineID, true, s.markRunning(ctx, c, e.engineID)
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
		for s.pool.count(t.ID) < s.opt.PoolSize && ctx.Err() == nil {
			if err := s.addPooled(ctx, rt, t); err != nil {
				errList = append(errList, fmt.Errorf("warm pool for template %d: %w", t.ID, err))
				break
			}
		}
	}
	return errors.Join(errList...)
}

// Warm returns how many warm sandboxes of a template are ready to hand out
// (-1 for every template).
func (s *Service) Warm(templateID int64) int {
	if templateID >= 0 {
		return s.pool.count(templateID)
	}
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	n := 0
	for _, l := range s.pool.ready {
		n += len(l)
	}
	return n
}

func (p *pool) count(templateID int64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready[templateID])
}

// dropStale removes pooled containers whose template changed, went away or
// stopped being poolable, and those past PoolMaxAge.
func (s *Service) dropStale(ctx context.Context, rt Runtime, current map[int64]*Template) {
	now := s.now()
	var drop []string
	s.pool.mu.Lock()
	for id, list := range s.pool.ready {
		keep := list[:0]
		for _, e := range list {
			t := current[id]
			if t == nil || e.version != templateVersion(t) || now.Sub(e.since) >= s.opt.PoolMaxAge {
				drop = append(drop, e.engineID)
				continue
			}
			keep = append(keep, e)
		}
		s.pool.ready[id] = keep
	}
	s.pool.mu.Unlock()
	for _, id := range drop {
		s.removeEngine(ctx, rt, id)
	}
}

// addPooled creates and starts one container for t's pool.
func (s *Service) addPooled(ctx context.Context, rt Runtime, t *Template) error {
	now := s.now()
	spec := s.engineSpec(ctx, rt, t, &Container{UserID: 0})
	b := make([]byte, 4)
	rand.Read(b)
	spec.Name = fmt.Sprintf("tuxlab-%s-pool-%s", s.instance[:8], hex.EncodeToString(b))
	delete(spec.Labels, LabelContainer)
	delete(spec.Labels, LabelUser)
	spec.Labels[LabelPool] = strconv.FormatInt(t.ID, 10)
	spec.Labels[LabelPoolOwner] = s.pool.owner
	spec.Labels[LabelPoolVersion] = templateVersion(t)
	spec.Labels[LabelPoolSince] = now.Format(time.RFC3339)
	id, err := rt.Create(ctx, spec)
	if err != nil {
		return err
	}
	if err := rt.Start(ctx, id); err != nil {
		s.removeEngine(ctx, rt, id)
		return err
	}
	s.pool.mu.Lock()
	s.pool.ready[t.ID] = append(s.pool.ready[t.ID], pooled{engineID: id, version: templateVersion(t), since: now})
	s.pool.mu.Unlock()
	return nil
}

// drainPool removes every container in this process's pool.
func (s *Service) drainPool(ctx context.Context) {
	rt, err := s.rt()
	if err != nil {
		return
	}
	s.pool.mu.Lock()
	var ids []string
	for _, list := range s.pool.ready {
		for _, e := range list {
			ids = append(ids, e.engineID)
		}
	}
	s.pool.ready = map[int64][]pooled{}
	s.pool.mu.Unlock()
	for _, id := range ids {
		s.removeEngine(ctx, rt, id)
	}
}

// removeEngine removes an engine container that has no row, logging a failure
// (reconciliation removes what is left).
func (s *Service) removeEngine(ctx context.Context, rt Runtime, engineID string) {
	if err := rt.Remove(ctx, engineID); err != nil && !errors.Is(err, ErrGone) {
		s.opt.Log.Warn("could not remove a pooled sandbox; reconciliation will", "engine_id", engineID, "error", err.Error())
	}
}

// pooledLeftover reports whether an engine container without a row is a
// pool entry that no living process will use: made more than twice
// PoolMaxAge ago (a living process replaces its entries at PoolMaxAge). A
// younger pool entry is some process's, and is left alone.
func (s *Service) pooledLeftover(in Instance) (pool, leftover bool) {
	if in.Labels[LabelPool] == "" {
		return false, false
	}
	since, err := time.Parse(time.RFC3339, in.Labels[LabelPoolSince])
	return true, err != nil || s.now().Sub(since) > 2*s.opt.PoolMaxAge
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
