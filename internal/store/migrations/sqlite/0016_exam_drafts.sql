-- The answers a learner has given so far in an attempt still in progress,
-- saved as they answer, so a reload, another tab or another device resumes
-- with them in place. JSON in the submit's shape: [{"question_id": ...}].
-- See docs/labs-and-exams.md for what becomes of a draft.
ALTER TABLE exam_attempts ADD COLUMN draft TEXT NOT NULL DEFAULT '[]';
-- When the draft was last saved; NULL before the first save.
ALTER TABLE exam_attempts ADD COLUMN draft_saved_at TIMESTAMP;
