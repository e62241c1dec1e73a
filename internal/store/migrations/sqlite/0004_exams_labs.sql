-- Laboratories: practical tasks of a module, checked by scripts in the learner's sandbox.
CREATE TABLE labs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    slug               TEXT NOT NULL UNIQUE,
    module_id          INTEGER REFERENCES modules (id) ON DELETE SET NULL,
    template_id        INTEGER NOT NULL REFERENCES sandbox_templates (id),
    title              TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    time_limit_minutes INTEGER NOT NULL,
    passing_score      INTEGER NOT NULL,
    setup_script       TEXT NOT NULL DEFAULT '',
    solution           TEXT NOT NULL DEFAULT '',
    created_at         TIMESTAMP NOT NULL,
    updated_at         TIMESTAMP NOT NULL
);
-- A module (a "section") has at most one laboratory.
CREATE UNIQUE INDEX labs_module_idx ON labs (module_id) WHERE module_id IS NOT NULL;
CREATE TABLE lab_tasks (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    lab_id       INTEGER NOT NULL REFERENCES labs (id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    title        TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    hint         TEXT NOT NULL DEFAULT '',
    points       INTEGER NOT NULL,
    check_script TEXT NOT NULL,
    UNIQUE (lab_id, position)
);
CREATE TABLE lab_attempts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    lab_id        INTEGER NOT NULL REFERENCES labs (id) ON DELETE CASCADE,
    user_id       INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    container_id  INTEGER REFERENCES containers (id) ON DELETE SET NULL,
    status        TEXT NOT NULL CHECK (status IN ('in_progress', 'grading', 'submitted', 'expired')),
    started_at    TIMESTAMP NOT NULL,
    expires_at    TIMESTAMP NOT NULL,
    finished_at   TIMESTAMP,
    grading_since TIMESTAMP,
    points        INTEGER NOT NULL DEFAULT 0,
    max_points    INTEGER NOT NULL DEFAULT 0,
    score         INTEGER NOT NULL DEFAULT 0,
    passed        BOOLEAN NOT NULL DEFAULT 0,
    results       TEXT NOT NULL DEFAULT '[]', -- JSON: per task passed, feedback, and the admins-only output
    checks        INTEGER NOT NULL DEFAULT 0,
    last_check_at TIMESTAMP
);
-- One open attempt per learner and lab: a concurrent second start fails here.
CREATE UNIQUE INDEX lab_attempts_open_idx ON lab_attempts (lab_id, user_id) WHERE status IN ('in_progress', 'grading');
CREATE INDEX lab_attempts_user_idx ON lab_attempts (user_id);

-- Exams: questions of four kinds; practical ones are checked in the learner's sandbox.
CREATE TABLE exams (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    slug               TEXT NOT NULL UNIQUE,
    module_id          INTEGER REFERENCES modules (id) ON DELETE SET NULL,
    template_id        INTEGER REFERENCES sandbox_templates (id),
    title              TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    time_limit_minutes INTEGER NOT NULL,
    passing_score      INTEGER NOT NULL,
    max_attempts       INTEGER NOT NULL DEFAULT 0,
    created_at         TIMESTAMP NOT NULL,
    updated_at         TIMESTAMP NOT NULL
);
CREATE TABLE exam_questions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    exam_id     INTEGER NOT NULL REFERENCES exams (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('single_choice', 'multiple_choice', 'short_text', 'practical')),
    prompt      TEXT NOT NULL,
    options     TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
    points      INTEGER NOT NULL,
    explanation TEXT NOT NULL DEFAULT '',
    answer_key  TEXT NOT NULL, -- JSON: answer, answers, accept, check, solution; never shown to learners
    UNIQUE (exam_id, position)
);
CREATE TABLE exam_attempts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    exam_id       INTEGER NOT NULL REFERENCES exams (id) ON DELETE CASCADE,
    user_id       INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    status        TEXT NOT NULL CHECK (status IN ('in_progress', 'grading', 'submitted', 'expired')),
    started_at    TIMESTAMP NOT NULL,
    expires_at    TIMESTAMP NOT NULL,
    finished_at   TIMESTAMP,
    grading_since TIMESTAMP,
    points        INTEGER NOT NULL DEFAULT 0,
    max_points    INTEGER NOT NULL DEFAULT 0,
    score         INTEGER NOT NULL DEFAULT 0,
    passed        BOOLEAN NOT NULL DEFAULT 0,
    answers       TEXT NOT NULL DEFAULT '[]', -- JSON: what the learner submitted
    results       TEXT NOT NULL DEFAULT '[]'  -- JSON: per question correct, points, feedback, admins-only output
);
CREATE UNIQUE INDEX exam_attempts_open_idx ON exam_attempts (exam_id, user_id) WHERE status IN ('in_progress', 'grading');
CREATE INDEX exam_attempts_user_idx ON exam_attempts (user_id);
