-- Machines (issue 23): a template says which kind of sandbox it makes, a
-- container or a machine (a virtual machine), and a machine's blank disks;
-- a sandbox keeps the kind it was made as, since that says which runtime
-- holds it even if its template changes. See docs/machines.md.
ALTER TABLE sandbox_templates ADD COLUMN kind TEXT NOT NULL DEFAULT 'container';
ALTER TABLE sandbox_templates ADD COLUMN extra_disks_mb TEXT NOT NULL DEFAULT '[]'; -- JSON array of MiB
ALTER TABLE containers ADD COLUMN kind TEXT NOT NULL DEFAULT 'container';
-- A sandbox on a private segment shared with others (a lab's machines):
-- the segment's key, so the segment goes with its last sandbox.
ALTER TABLE containers ADD COLUMN segment TEXT NOT NULL DEFAULT '';
-- Labs of several machines: the machines (name, setup, solution: JSON,
-- admins only), the machine each task's check runs on, and each attempt's
-- machines with their sandboxes (JSON [{"name", "container_id"}]).
ALTER TABLE labs ADD COLUMN machines TEXT NOT NULL DEFAULT '[]';
ALTER TABLE lab_tasks ADD COLUMN machine TEXT NOT NULL DEFAULT '';
ALTER TABLE lab_attempts ADD COLUMN machines TEXT NOT NULL DEFAULT '[]';
