-- Machines (issue 23): a template says which kind of sandbox it makes, a
-- container or a machine (a virtual machine), and a machine's blank disks;
-- a sandbox keeps the kind it was made as, since that says which runtime
-- holds it even if its template changes. See docs/machines.md.
ALTER TABLE sandbox_templates ADD COLUMN kind TEXT NOT NULL DEFAULT 'container';
ALTER TABLE sandbox_templates ADD COLUMN extra_disks_mb TEXT NOT NULL DEFAULT '[]'; -- JSON array of MiB
ALTER TABLE containers ADD COLUMN kind TEXT NOT NULL DEFAULT 'container';
