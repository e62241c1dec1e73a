-- A user's own profile: a display name, a short biography, and the file name
-- of their avatar in $TUXLAB_DATA_DIR/avatars (NULL: none).
ALTER TABLE users ADD COLUMN full_name TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN bio TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN avatar TEXT;
