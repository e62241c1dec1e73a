-- Activity per learner and quarter of an hour, written with each activity row:
-- streaks and days read a few hundred of these instead of every event. Every
-- time zone's offset is a whole number of quarters, so days stay exact.
CREATE TABLE activity_quarters (
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    quarter BIGINT NOT NULL, -- Unix seconds / 900
    events  INTEGER NOT NULL,
    PRIMARY KEY (user_id, quarter)
);
INSERT INTO activity_quarters (user_id, quarter, events)
    SELECT user_id, CAST(floor(extract(epoch FROM at) / 900) AS BIGINT), count(*) FROM activity GROUP BY 1, 2;
