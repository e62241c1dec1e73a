-- Shared terminals (docs/terminal.md, "Shared terminals"): a sandbox's owner
-- invites someone to watch its terminal with a link whose token is kept
-- hashed. A share lives until expires_at or until the owner ends it (the row
-- is deleted); deleting the sandbox deletes its shares.
CREATE TABLE terminal_shares (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    container_id INTEGER NOT NULL REFERENCES containers (id) ON DELETE CASCADE,
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash   TEXT NOT NULL,
    mode         TEXT NOT NULL,
    typing       BOOLEAN NOT NULL DEFAULT 0,
    expires_at   TIMESTAMP NOT NULL,
    created_at   TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX terminal_shares_token_key ON terminal_shares (token_hash);
CREATE INDEX terminal_shares_container_idx ON terminal_shares (container_id);
