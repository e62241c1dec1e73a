-- Exam attempts grade fairly: each attempt shows the options of its choice
-- questions in an order drawn at its start, and grades its practical questions
-- in a sandbox made fresh for it.
-- option_order: JSON {"<question id>": [authored index of shown option 0, ...]};
-- a question missing from it shows its options as authored (attempts started
-- before this migration).
ALTER TABLE exam_attempts ADD COLUMN option_order TEXT NOT NULL DEFAULT '{}';
-- The sandbox made for the attempt; NULL without practical questions and for
-- attempts started before this migration. Not a foreign key: the id stays
-- once the sandbox is deleted, so the attempt knows it had one (and grades
-- its practical questions as failed rather than in another sandbox).
ALTER TABLE exam_attempts ADD COLUMN container_id BIGINT;
