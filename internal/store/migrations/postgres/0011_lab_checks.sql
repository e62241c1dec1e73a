-- A lab check in progress is row state, so no replica starts a second one on
-- the same attempt; the interval to the next check counts from last_check_at,
-- now the end of the previous check.
ALTER TABLE lab_attempts ADD COLUMN checking_since TIMESTAMPTZ;
-- When the lab removed the attempt's sandbox (the attempt ended), so the
-- learner is told rather than left wondering where it went.
ALTER TABLE lab_attempts ADD COLUMN sandbox_removed_at TIMESTAMPTZ;
-- Starts per learner and lab in the last day are counted at every start.
CREATE INDEX lab_attempts_user_lab_started_idx ON lab_attempts (user_id, lab_id, started_at);
