-- Logout: tokens issued at or before this time are refused.
ALTER TABLE users ADD COLUMN tokens_revoked_at TIMESTAMP;
