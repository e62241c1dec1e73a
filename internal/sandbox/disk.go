package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Every sandbox's writable space is bounded, whatever the engine's storage
// driver. Where the driver has quotas (btrfs, which scripts/ensure-engine.sh
// sets up; overlay2 on XFS with pquota; zfs) the engine applies the limit
// itself and a write past it fails. Elsewhere (overlay2 on ext4, the common
// case) nothing in the engine can bound it, so tuxlab watches: every
// DiskCheckInterval it measures each running sandbox (Runtime.DiskUsage:
// the blocks its writable layer's files take, so sparse files cost what they
// hold, and the files deleted while still open) and removes a sandbox that
// went past its limit, which gives the host its space back at once. It
// measures a sandbox too before stopping it and after starting it, so one
// stopped within an interval of a large write does not keep it. The learner
// keeps the row, in status error, with the reason. The host can then lose at
// most the limit plus what one sandbox writes in one interval, for as long as
// that interval. docs/sandboxes.md states the bound.

// LabelDiskQuota marks a container whose disk limit the engine applies
// ("engine"); the watch measures every other container with a limit.
const LabelDiskQuota = "org.tuxlab.disk-quota"

// quota states of the engine's storage driver, probed once.
const (
	quotaUnknown int32 = iota
	quotaApplied
	quotaMissing
)

// diskLimitMB is the writable space a sandbox from t gets, in MiB (0: none).
func (s *Service) diskLimitMB(t *Template) int {
	if t.DiskMB > 0 {
		return t.DiskMB
	}
	return s.opt.DiskMB
}

// engineQuota reports whether the engine applies disk limits itself. The
// answer depends on the engine's storage driver only, so it is probed once,
// with an image that exists.
func (s *Service) engineQuota(ctx context.Context, rt Runtime, image string) bool {
	if s.opt.DiskWatchOnly {
		return false
	}
	switch s.quota.Load() {
	case quotaApplied:
		return true
	case quotaMissing:
		return false
	}
	err := rt.ProbeDiskQuota(ctx, image)
	switch {
	case err == nil:
		s.quota.Store(quotaApplied)
		return true
	case errors.Is(err, ErrNoDiskQuota):
		s.opt.Log.Info("the engine's storage driver has no disk quotas: tuxlab watches each sandbox's writable space instead",
			"interval", s.opt.DiskCheckInterval.String())
		s.quota.Store(quotaMissing)
	}
	return false // unknown (the probe failed): watch, and ask again next time
}

// WatchDisk measures every running sandbox whose disk limit the engine does
// not apply and removes each one past its limit.
func (s *Service) WatchDisk(ctx context.Context) error {
	rt, err := s.rt()
	if err != nil {
		return err
	}
	instances, err := s.engineContainers(ctx, rt)
	if err != nil {
		return err
	}
	// Rows are found by engine id: a sandbox from the warm pool carries no
	// row id in its labels.
	rows, _, err := s.store.FindContainers(ctx, ContainerFilter{Status: StatusRunning})
	if err != nil {
		return err
	}
	rowOf := make(map[string]int64, len(rows))
	for _, c := range rows {
		rowOf[c.EngineID] = c.ID
	}
	running := slices.DeleteFunc(instances, func(in Instance) bool { return !in.State.Running })
	_, err = s.checkDisk(ctx, rt, rowOf, running)
	return err
}

// watchedLimitMB is the disk limit of container in that the watch applies,
// in MiB (0: none, or the engine applies it).
func watchedLimitMB(in Instance) int {
	if in.Labels[LabelDiskQuota] == "engine" {
		return 0
	}
	limit, _ := strconv.Atoi(in.Labels[LabelDiskMB])
	return max(limit, 0)
}

// checkDisk measures the containers of instances the watch bounds, all at
// once, and removes each one past its limit; it returns the engine ids it
// removed. rowOf gives their rows (none: a warm sandbox). A measure the
// engine could only give in part still removes what it found past limits.
func (s *Service) checkDisk(ctx context.Context, rt Runtime, rowOf map[string]int64, instances []Instance) (removed []string, err error) {
	var ids []string
	for _, in := range instances {
		if watchedLimitMB(in) > 0 {
			ids = append(ids, in.EngineID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	used, err := rt.DiskUsage(ctx, ids)
	errList := []error{err}
	for _, in := range instances {
		limit := watchedLimitMB(in)
		n, ok := used[in.EngineID]
		if limit == 0 || !ok || n <= int64(limit)<<20 {
			continue
		}
		errList = append(errList, s.removeOverDisk(ctx, rt, rowOf[in.EngineID], in.EngineID, n, limit))
		removed = append(removed, in.EngineID)
	}
	return removed, errors.Join(errList...)
}

// checkDiskOf is checkDisk for the engine container of row c, found among
// this install's (a container from the warm pool carries no row id). The
// caller is about to stop it, or has just started it.
func (s *Service) checkDiskOf(ctx context.Context, rt Runtime, c *Container) (removed bool, err error) {
	instances, err := s.engineContainers(ctx, rt)
	if err != nil {
		return false, err
	}
	i := slices.IndexFunc(instances, func(in Instance) bool { return in.EngineID == c.EngineID })
	if i < 0 {
		return false, nil
	}
	gone, err := s.checkDisk(ctx, rt, map[string]int64{c.EngineID: c.ID}, instances[i:i+1])
	return len(gone) > 0, err
}

// removeOverDisk removes a sandbox that wrote past its limit and records why
// on its row, which stays so the learner sees what happened. The row is
// written first: a reconciliation that meanwhile finds the container gone then
// sees a row no longer pointing at it, instead of calling it vanished, and a
// removal that fails leaves an orphan the next reconciliation removes.
func (s *Service) removeOverDisk(ctx context.Context, rt Runtime, id int64, engineID string, used int64, limitMB int) error {
	s.opt.Log.Warn("removing a sandbox past its disk limit", "container_id", id, "engine_id", engineID,
		"used_mb", used>>20, "limit_mb", limitMB)
	var userID int64
	if id != 0 { // 0: nobody's yet (a warm sandbox)
		c, err := s.store.UpdateContainer(ctx, id, func(c *Container) error {
			if c.EngineID != engineID {
				return nil // recreated or deleted meanwhile
			}
			now := s.now()
			c.Status, c.EngineID, c.StoppedAt = StatusError, "", &now
			c.StatusDetail = fmt.Sprintf("Removed after writing %d MiB, over its disk limit of %d MiB: delete it and create a new one", used>>20, limitMB)
			return nil
		})
		switch {
		case errors.Is(err, ErrContainerNotFound): // the row went first (deleted meanwhile)
		case err != nil:
			return err
		default:
			userID = c.UserID
		}
	}
	if err := rt.Remove(ctx, engineID); err != nil && !errors.Is(err, ErrGone) {
		return err
	}
	if userID != 0 {
		s.dropUserNetwork(ctx, userID, KindContainer)
	}
	return nil
}

// watchDisk runs WatchDisk every interval until ctx ends.
func (s *Service) watchDisk(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := s.WatchDisk(ctx); err != nil && ctx.Err() == nil {
			s.opt.Log.Warn("sandbox disk watch", "error", err.Error())
		}
	}
}
