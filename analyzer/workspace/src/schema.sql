-- vprof workspace schema (.vprof/vprof.db). PRAGMA user_version holds the schema
-- version; docs/workspace.md describes every table. Times are nanoseconds.

-- Key/value facts about the workspace: project root, compile database, H (root height).
CREATE TABLE IF NOT EXISTS meta(
  key   TEXT PRIMARY KEY,
  value TEXT
);

-- Static call graph nodes: every function seen, defined or only declared.
CREATE TABLE IF NOT EXISTS functions(
  id        INTEGER PRIMARY KEY,          -- dense, from 1
  usr       TEXT NOT NULL UNIQUE,         -- clang USR
  name      TEXT NOT NULL,                -- qualified name
  file      TEXT,                         -- absolute path of the definition (or decl)
  line      INTEGER,
  defined   INTEGER NOT NULL DEFAULT 0,   -- 1: a body was seen; 0: external
  height    INTEGER,                      -- longest path to a leaf, SCCs condensed
  annotated INTEGER NOT NULL DEFAULT 0    -- 1: contains vprof interval annotations
);

-- Static call graph edges, one per call site in the source.
CREATE TABLE IF NOT EXISTS calls(
  caller INTEGER NOT NULL REFERENCES functions(id),
  callee INTEGER NOT NULL REFERENCES functions(id),
  kind   TEXT NOT NULL,                   -- direct|member|virtual|ctor|dtor|operator|lambda|indirect
  file   TEXT NOT NULL,
  line   INTEGER NOT NULL,
  col    INTEGER NOT NULL,
  UNIQUE(caller, callee, file, line, col)
);
CREATE INDEX IF NOT EXISTS calls_by_caller ON calls(caller);
CREATE INDEX IF NOT EXISTS calls_by_callee ON calls(callee);

-- Site table: the integers written into traces. A site keeps its id across
-- iterations (same kind, function and source position => same id).
CREATE TABLE IF NOT EXISTS sites(
  id          INTEGER PRIMARY KEY,        -- dense, from 1; ENTER/EXIT record site
  kind        TEXT NOT NULL CHECK(kind IN ('body', 'call')),
  function    INTEGER NOT NULL REFERENCES functions(id), -- the instrumented function
  callee      INTEGER REFERENCES functions(id),          -- call sites: target if known
  callee_name TEXT,                       -- call sites: spelled callee
  file        TEXT NOT NULL,
  line        INTEGER NOT NULL,
  col         INTEGER NOT NULL,
  UNIQUE(kind, function, file, line, col)
);

-- Plans: which functions are instrumented in each iteration (0 = first plan).
CREATE TABLE IF NOT EXISTS plans(
  iteration INTEGER NOT NULL,
  function  INTEGER NOT NULL REFERENCES functions(id),
  reason    TEXT NOT NULL,                -- root|depth|expand:<factor>|user
  PRIMARY KEY(iteration, function)
);
