"""The PostgreSQL session store (`--store postgresql://…`): `store.PgRecordStore`
behind the session store seam (`runtime.services.session_store`), its recordings
(`recording.py`), leases (`lease.py`) and versioned migrations (`migrations.py`,
`sql/`). asyncpg is imported only when a database store is used (extra `postgres`).

ADK's `DatabaseSessionService` is not used: it stores ADK events, which here are
runtime state rebuilt from the record (ARCHITECTURE.md), and it has no lease."""
