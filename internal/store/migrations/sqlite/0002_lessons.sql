CREATE TABLE modules (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    slug        TEXT NOT NULL UNIQUE,
    title       TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    order_index INTEGER NOT NULL DEFAULT 0,
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);
CREATE TABLE themes (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    module_id         INTEGER NOT NULL REFERENCES modules (id) ON DELETE CASCADE,
    slug              TEXT NOT NULL UNIQUE,
    title             TEXT NOT NULL,
    order_index       INTEGER NOT NULL DEFAULT 0,
    estimated_minutes INTEGER NOT NULL DEFAULT 10,
    content_md        TEXT NOT NULL DEFAULT '',
    content_html      TEXT NOT NULL DEFAULT '',
    content_updated_at TIMESTAMP NOT NULL,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL
);
CREATE INDEX themes_module_idx ON themes (module_id, order_index, id);
CREATE TABLE theme_completions (
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    theme_id     INTEGER NOT NULL REFERENCES themes (id) ON DELETE CASCADE,
    completed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (user_id, theme_id)
);
CREATE INDEX theme_completions_theme_idx ON theme_completions (theme_id);
