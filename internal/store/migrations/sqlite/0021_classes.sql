-- Classes (docs/classes.md): an instructor's group of learners, joined with
-- a code. Deleting the instructor deletes their classes.
CREATE TABLE classes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id   INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    join_code  TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX classes_join_code_key ON classes (join_code);
CREATE INDEX classes_owner_idx ON classes (owner_id);
-- The learners of a class.
CREATE TABLE class_members (
    class_id  INTEGER NOT NULL REFERENCES classes (id) ON DELETE CASCADE,
    user_id   INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    joined_at TIMESTAMP NOT NULL,
    PRIMARY KEY (class_id, user_id)
);
CREATE INDEX class_members_user_idx ON class_members (user_id);
-- A laboratory or an exam a class must finish by a date: exactly one of
-- lab_id and exam_id is set, and deleting the item deletes the assignment.
CREATE TABLE class_assignments (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    class_id   INTEGER NOT NULL REFERENCES classes (id) ON DELETE CASCADE,
    lab_id     INTEGER REFERENCES labs (id) ON DELETE CASCADE,
    exam_id    INTEGER REFERENCES exams (id) ON DELETE CASCADE,
    due_at     TIMESTAMP NOT NULL,
    created_at TIMESTAMP NOT NULL,
    CHECK ((lab_id IS NULL) <> (exam_id IS NULL))
);
CREATE UNIQUE INDEX class_assignments_lab_key ON class_assignments (class_id, lab_id) WHERE lab_id IS NOT NULL;
CREATE UNIQUE INDEX class_assignments_exam_key ON class_assignments (class_id, exam_id) WHERE exam_id IS NOT NULL;
