-- Every change to a user's row is announced on the channel tuxlab_users, the
-- user id as payload, by the database itself: no write path, in tuxlab or
-- outside it, can forget to. NOTIFY in a transaction is delivered when it
-- commits, and not at all if it rolls back. (SQLite has no such channel and
-- no migration 0015.)
CREATE FUNCTION tuxlab_users_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('tuxlab_users', OLD.id::text);
    ELSE
        PERFORM pg_notify('tuxlab_users', NEW.id::text);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER users_notify
AFTER INSERT OR UPDATE OR DELETE ON users
FOR EACH ROW EXECUTE FUNCTION tuxlab_users_notify();
