"""Storage: the engine (db), the tables, one module of queries per table (bundle_store, job_store,
diagnosis_store, feedback), the stored charts, the intake of an upload into the content store, and the
alembic migrations."""
