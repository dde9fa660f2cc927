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
  annotated INTEGER NOT NULL DEFAULT 0,   -- 1: contains vprof interval annotations
  body      INTEGER NOT NULL DEFAULT 1,   -- 0: defined `= default` out of line: no body to probe
  rewritable INTEGER NOT NULL DEFAULT 1   -- 0: defined only in headers (only a TU's main file is rewritten)
);

-- Static call graph edges, one per call site in the source.
CREATE TABLE IF NOT EXISTS calls(
  caller INTEGER NOT NULL REFERENCES functions(id),
  callee INTEGER NOT NULL REFERENCES functions(id),
  kind   TEXT NOT NULL,                   -- direct|member|virtual|ctor|dtor|operator|lambda|indirect
  file   TEXT NOT NULL,
  line   INTEGER NOT NULL,
  col    INTEGER NOT NULL,
  in_loop INTEGER NOT NULL DEFAULT 0,     -- 1: inside a for/while/do loop of the caller
  UNIQUE(caller, callee, file, line, col)
);
CREATE INDEX IF NOT EXISTS calls_by_caller ON calls(caller);
CREATE INDEX IF NOT EXISTS calls_by_callee ON calls(callee);

-- Source files that contain vprof marks (interval, attach, hand-off, wait and wake
-- annotations), written by the scan: the compiler wrapper builds them with VPROF_ENABLE
-- whether or not a function of theirs is planned, and an object of one compiled without
-- vprof is rebuilt (its marks would be missing from the trace).
CREATE TABLE IF NOT EXISTS marked_files(
  file TEXT PRIMARY KEY
);

-- Translation units the scan skipped (they did not parse, or the scan crashed in them and
-- went on), written by the scan: their functions are missing from the call graph, and the
-- planner names them when a top place calls a function no scanned unit defines.
CREATE TABLE IF NOT EXISTS skipped_units(
  file   TEXT PRIMARY KEY,                -- absolute path
  reason TEXT NOT NULL                    -- "does not parse", "crashed (signal 11, SIGSEGV) in the scan"
);

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

-- Plans: which functions are instrumented in each iteration (0 = first plan), written by
-- the planner (planner/). Version 1 kept the factor and the final mark inside `reason`
-- ("expand:<factor>", "final:<reason>"); version 2 has columns for them.
CREATE TABLE IF NOT EXISTS plans(
  iteration INTEGER NOT NULL,
  function  INTEGER NOT NULL REFERENCES functions(id),
  reason    TEXT NOT NULL,                -- root|depth|expand|answer|outer|user
  factor    TEXT,                         -- expand: the factor (or place) key that added it
  final     INTEGER NOT NULL DEFAULT 0,   -- 1: a final plan (what the loop's answer keeps)
  body_only INTEGER NOT NULL DEFAULT 0,   -- 1: its body probe only, no call-site probes
  PRIMARY KEY(iteration, function)
);

-- The call sites a final plan times (docs/planner.md, "The final plan"): of the outside and
-- dispatching calls of its functions, those whose places carried variance. The rewriter
-- gives the others no probe.
CREATE TABLE IF NOT EXISTS final_sites(
  iteration INTEGER NOT NULL,
  site      INTEGER NOT NULL,
  PRIMARY KEY(iteration, site)
);

-- What the planner predicted a plan would cost, in records per interval: the part of the
-- last plan it kept (measured) and what it added (predicted). The next run's measurement
-- against it calibrates the next predictions (docs/planner.md, "Cost model").
CREATE TABLE IF NOT EXISTS plan_costs(
  iteration      INTEGER PRIMARY KEY,
  kept_records   REAL NOT NULL,
  added_records  REAL NOT NULL,
  budget_records REAL NOT NULL
);

-- Analysis results, written by vprof::analyzer::store.
-- Times in ns, variances in ns^2; shares are fractions of Var(L). docs/analyzer.md.

-- One analysis of one trace directory, for one plan iteration.
CREATE TABLE IF NOT EXISTS analysis_runs(
  id                   INTEGER PRIMARY KEY,
  iteration            INTEGER NOT NULL,
  trace_dir            TEXT NOT NULL,
  created              TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  records              INTEGER NOT NULL,
  streams              INTEGER NOT NULL,
  processes            INTEGER NOT NULL,
  dropped              INTEGER NOT NULL,
  intervals            INTEGER NOT NULL,
  intervals_unfinished INTEGER NOT NULL,
  wake_edges           INTEGER NOT NULL,
  root_height          INTEGER NOT NULL,   -- H
  ticks_per_second     REAL NOT NULL,
  max_residual         REAL NOT NULL,      -- worst tree residual over all groups
  max_stream_records   INTEGER NOT NULL DEFAULT 0, -- the longest stream (records + dropped)
  ranking              TEXT NOT NULL DEFAULT 'net' CHECK(ranking IN ('net', 'vprofiler')),
  -- CPU time (user + system) of the traced processes that reported it at exit (<pid>.cpu),
  -- and how many did (a fact of the run; docs/planner.md says why no budget uses it)
  cpu_ns               REAL NOT NULL DEFAULT 0,
  cpu_processes        INTEGER NOT NULL DEFAULT 0,
  -- first interval's begin to last interval's end, and the analysing machine's cores: the
  -- machine's capacity per interval (cores x span / intervals), the planner's budget basis
  span_ns              REAL NOT NULL DEFAULT 0,
  cores                INTEGER NOT NULL DEFAULT 0,
  -- probe records on the intervals' critical paths, summed over the intervals (an event
  -- loop's interval holds every command of its batch): the planner's price of a plan
  critical_records     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS analysis_runs_by_iteration ON analysis_runs(iteration);

-- Latency statistics per interval type ('' = all intervals).
CREATE TABLE IF NOT EXISTS interval_stats(
  run INTEGER NOT NULL REFERENCES analysis_runs(id) ON DELETE CASCADE,
  label TEXT NOT NULL,
  count INTEGER NOT NULL,
  mean_ns REAL, var_ns2 REAL, cv REAL, min_ns REAL, p50_ns REAL, p95_ns REAL, p99_ns REAL,
  max_ns REAL, max_residual REAL,
  PRIMARY KEY(run, label)
);

-- Variance tree nodes per group: T_n and B_n statistics.
CREATE TABLE IF NOT EXISTS tree_nodes(
  run INTEGER NOT NULL REFERENCES analysis_runs(id) ON DELETE CASCADE,
  label TEXT NOT NULL,
  node INTEGER NOT NULL,        -- id within this run
  parent INTEGER,               -- NULL for the root
  path TEXT NOT NULL,           -- stable key: /s12/wait:mutex/s7
  kind TEXT NOT NULL CHECK(kind IN ('root', 'site', 'wait', 'untracked')),
  site INTEGER,                 -- sites.id for kind 'site'
  function INTEGER,             -- functions.id behind the node, when known
  name TEXT NOT NULL,
  height INTEGER,
  mean_ns REAL, var_ns2 REAL, share REAL,
  body_mean_ns REAL, body_var_ns2 REAL,
  expanded INTEGER NOT NULL,    -- 1: Var(T_n) decomposed over [children..., body]
  residual REAL,
  PRIMARY KEY(run, label, node)
);

-- Ranked factors (terms of the variance trees) per group.
CREATE TABLE IF NOT EXISTS factors(
  run INTEGER NOT NULL REFERENCES analysis_runs(id) ON DELETE CASCADE,
  label TEXT NOT NULL,
  rank INTEGER NOT NULL,        -- 1 = highest score
  key TEXT NOT NULL,            -- var:<path>[#body] | cov:<a>|<b>
  kind TEXT NOT NULL CHECK(kind IN ('var', 'cov')),
  parent INTEGER NOT NULL,      -- tree_nodes.node whose decomposition holds the term
  a INTEGER NOT NULL, a_body INTEGER NOT NULL,
  b INTEGER, b_body INTEGER,
  name TEXT NOT NULL,
  term_ns2 REAL NOT NULL,       -- Var, or 2 Cov
  share REAL NOT NULL, share_lo REAL, share_hi REAL,
  specificity REAL NOT NULL, score REAL NOT NULL, -- score: by the run's ranking (analysis_runs)
  leaf INTEGER NOT NULL,
  net_share REAL NOT NULL DEFAULT 0,       -- share less half of each negative covariance with a sibling
  vprofiler_score REAL NOT NULL DEFAULT 0, -- specificity x share (VProfiler's score)
  PRIMARY KEY(run, label, rank)
);

-- Places per group (a function, an outside call or a wait, all calling contexts merged),
-- ranked by score = specificity x contribution (ranking "net") or x share ("vprofiler").
CREATE TABLE IF NOT EXISTS places(
  run INTEGER NOT NULL REFERENCES analysis_runs(id) ON DELETE CASCADE,
  label TEXT NOT NULL,
  rank INTEGER NOT NULL,        -- 1 = highest score
  key TEXT NOT NULL,            -- f:<function> | x:<callee>@<caller> | s:<site> | w:<kind>@<enclosing key> | o:outside
  name TEXT NOT NULL,
  function INTEGER,             -- functions.id behind it (NULL: outside the program, a wait)
  contexts INTEGER NOT NULL,    -- tree nodes merged
  mean_ns REAL NOT NULL, var_ns2 REAL NOT NULL,
  share REAL NOT NULL,          -- Var(X) / Var(L)
  contribution REAL NOT NULL,   -- Cov(X, L) / Var(L)
  specificity REAL NOT NULL, score REAL NOT NULL,
  waker INTEGER NOT NULL,       -- 1: most of it is a waker's work (reached through a wake-up edge)
  via TEXT NOT NULL,            -- its contribution by way: "own path=0.02; [wait:cond] in f=0.26"
  place_kind TEXT NOT NULL DEFAULT 'function', -- function|call|site|wait|outside
  holder INTEGER,               -- call, wait: the function whose code makes the call or waits
  node INTEGER,                 -- tree_nodes.node of the context carrying most of it
  vprofiler_score REAL NOT NULL DEFAULT 0, -- specificity x share (VProfiler's score)
  outside_waker INTEGER NOT NULL DEFAULT 0, -- 1: a kernel wait's pseudo-waker that is no program
                                -- (the disk, the network, a timer): answered by its holder
  PRIMARY KEY(run, label, rank)
);

-- Waits on the intervals' own path per group, each with the waker's work below it.
CREATE TABLE IF NOT EXISTS waits(
  run INTEGER NOT NULL REFERENCES analysis_runs(id) ON DELETE CASCADE,
  label TEXT NOT NULL,
  rank INTEGER NOT NULL,        -- 1 = largest contribution
  key TEXT NOT NULL,            -- w:<kind>@<enclosing key>
  name TEXT NOT NULL,
  contexts INTEGER NOT NULL,
  mean_ns REAL NOT NULL, var_ns2 REAL NOT NULL,
  share REAL NOT NULL, contribution REAL NOT NULL,
  PRIMARY KEY(run, label, rank)
);

-- What-if: Var(L) and p99 if the factor's time were its mean in every interval.
CREATE TABLE IF NOT EXISTS whatif(
  run INTEGER NOT NULL REFERENCES analysis_runs(id) ON DELETE CASCADE,
  label TEXT NOT NULL,
  key TEXT NOT NULL,
  var_after_ns2 REAL, var_drop REAL, p99_after_ns REAL, p99_drop REAL,
  PRIMARY KEY(run, label, key)
);

-- How often each site ran in one analysed run (ENTER records over all streams, all threads,
-- inside and outside intervals): the planner's cost model (docs/planner.md).
CREATE TABLE IF NOT EXISTS site_calls(
  run   INTEGER NOT NULL REFERENCES analysis_runs(id) ON DELETE CASCADE,
  site  INTEGER NOT NULL,
  calls INTEGER NOT NULL,
  PRIMARY KEY(run, site)
);
