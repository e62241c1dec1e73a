-- Who owns authored content, and whether learners see it (docs/api-decisions.md,
-- "Instructors author their own content"). owner_id is the creating user; NULL
-- is content of the system (bundled, imported without an owner), which only
-- admins change. A deleted owner leaves the content to the admins. Everything
-- that existed before this migration stays published.
ALTER TABLE modules ADD COLUMN owner_id INTEGER REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE modules ADD COLUMN published BOOLEAN NOT NULL DEFAULT 1;
ALTER TABLE themes ADD COLUMN owner_id INTEGER REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE themes ADD COLUMN published BOOLEAN NOT NULL DEFAULT 1;
ALTER TABLE labs ADD COLUMN owner_id INTEGER REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE labs ADD COLUMN published BOOLEAN NOT NULL DEFAULT 1;
ALTER TABLE exams ADD COLUMN owner_id INTEGER REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE exams ADD COLUMN published BOOLEAN NOT NULL DEFAULT 1;
CREATE INDEX modules_owner_idx ON modules (owner_id);
CREATE INDEX themes_owner_idx ON themes (owner_id);
CREATE INDEX labs_owner_idx ON labs (owner_id);
CREATE INDEX exams_owner_idx ON exams (owner_id);
