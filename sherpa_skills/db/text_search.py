"""Full-text search, spelled per engine: FTS5 on SQLite, a GIN-indexed tsvector on PostgreSQL."""

# ts_rank's weights for D, C, B, A: the text (A) weighs 1.0, the tags (B) 0.5, as bm25(memory_fts, 1.0, 0.5) does.
_TS_WEIGHTS = "'{0, 0, 0.5, 1.0}'"

# FTS5 over text and tags, kept in step with the rows by triggers.
SQLITE_FULL_TEXT = """
        CREATE VIRTUAL TABLE memory_fts USING fts5(text, tags, content = 'memory_artifacts', content_rowid = 'seq',
            tokenize = 'unicode61 remove_diacritics 2');
        CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory_artifacts BEGIN
            INSERT INTO memory_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
        END;
        CREATE TRIGGER memory_fts_delete AFTER DELETE ON memory_artifacts BEGIN
            INSERT INTO memory_fts (memory_fts, rowid, text, tags) VALUES ('delete', old.seq, old.text, old.tags);
        END;
        CREATE TRIGGER memory_fts_update AFTER UPDATE OF text, tags ON memory_artifacts BEGIN
            INSERT INTO memory_fts (memory_fts, rowid, text, tags) VALUES ('delete', old.seq, old.text, old.tags);
            INSERT INTO memory_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
        END;
"""
# PostgreSQL's own full-text search: a stored tsvector of the text (weight A) and tags (weight B), GIN-indexed;
# 'simple' lower-cases without stemming, as FTS5's unicode61 does (it does not fold diacritics, unicode61 does).
POSTGRES_FULL_TEXT = """
        ALTER TABLE memory_artifacts ADD COLUMN fts tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('simple', text), 'A') || setweight(to_tsvector('simple', tags), 'B')) STORED;
        CREATE INDEX memory_artifacts_fts ON memory_artifacts USING GIN (fts);
"""
