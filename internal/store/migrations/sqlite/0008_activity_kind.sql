-- The dashboard's activity filtered by kind reads one learner's rows of one kind by time.
CREATE INDEX activity_user_kind_at_idx ON activity (user_id, kind, at, id);
