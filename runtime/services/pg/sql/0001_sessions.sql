-- Sessions, their append-only record lines, and the lease of the process driving each.
CREATE TABLE adk_sessions (
    id text PRIMARY KEY,
    cwd text NOT NULL,
    kind text NOT NULL DEFAULT 'main',
    title text,
    additional_directories jsonb NOT NULL DEFAULT '[]',
    metadata jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX adk_sessions_newest ON adk_sessions (updated_at DESC, id DESC);
CREATE INDEX adk_sessions_cwd_newest ON adk_sessions (cwd, updated_at DESC, id DESC);

-- One row per record line (a message, a `$set`, a `$rewindTo`), in Gemini CLI's JSON
-- shape, kept as written (json, not jsonb: key order and text unchanged).
CREATE TABLE adk_records (
    seq bigserial PRIMARY KEY,
    session_id text NOT NULL REFERENCES adk_sessions (id) ON DELETE CASCADE,
    line json NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX adk_records_session ON adk_records (session_id, seq);

CREATE TABLE adk_leases (
    session_id text PRIMARY KEY REFERENCES adk_sessions (id) ON DELETE CASCADE,
    holder text NOT NULL,
    expires_at timestamptz NOT NULL
);
