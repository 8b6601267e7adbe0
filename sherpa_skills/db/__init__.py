"""Where the truth is kept: SQLite in the home folder (the default), or PostgreSQL when several machines share it.

`database.Database` is the one way a store opens it and writes to it (the engine picked once, one transaction helper).

`url` chooses the engine, `postgres` connects (pooled, sqlite3-shaped), `sql` translates the statements the two engines
spell differently, `migrations` versions both schemas.
"""
