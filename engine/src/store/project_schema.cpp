// The migrations, oldest first; each comment says what its schema adds and why.
#include "store/project_schema.h"

namespace quire::sql {

const std::array<const char*, kMigrationCount> kMigrations = {R"SQL(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents(
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  page_count INTEGER NOT NULL,
  position INTEGER NOT NULL,
  added_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
CREATE TABLE pages(
  id INTEGER PRIMARY KEY,
  document_id INTEGER NOT NULL REFERENCES documents(id),
  source_index INTEGER NOT NULL,
  part INTEGER NOT NULL DEFAULT 0,
  source_file TEXT NOT NULL,
  file_page INTEGER NOT NULL,
  status TEXT NOT NULL DEFAULT 'queued' CHECK(status IN ('queued','done','failed')),
  flagged INTEGER NOT NULL DEFAULT 0,
  proofread INTEGER NOT NULL DEFAULT 0,
  failure TEXT, failure_kind TEXT,
  width INTEGER, height INTEGER, dpi INTEGER,
  region_x INTEGER, region_y INTEGER, region_w INTEGER, region_h INTEGER,
  skew_degrees REAL, preprocess TEXT, content_sha256 TEXT, text_layer TEXT,
  header TEXT, footer TEXT, page_number TEXT,
  updated_at TEXT,
  UNIQUE(document_id, source_index, part));
CREATE TABLE results(
  page_id INTEGER PRIMARY KEY REFERENCES pages(id) ON DELETE CASCADE,
  engine TEXT NOT NULL, engine_version TEXT NOT NULL, language TEXT NOT NULL,
  text TEXT NOT NULL, mean_confidence REAL NOT NULL, low_confidence_share REAL NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
CREATE TABLE lines(
  id INTEGER PRIMARY KEY,
  page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
  line_index INTEGER NOT NULL, block INTEGER NOT NULL, paragraph INTEGER NOT NULL,
  x INTEGER, y INTEGER, w INTEGER, h INTEGER);
CREATE INDEX lines_page ON lines(page_id, line_index);
CREATE TABLE words(
  id INTEGER PRIMARY KEY,
  line_id INTEGER NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
  word_index INTEGER NOT NULL, text TEXT NOT NULL,
  x INTEGER, y INTEGER, w INTEGER, h INTEGER, confidence REAL NOT NULL);
CREATE INDEX words_line ON words(line_id, word_index);
-- A user's edits: never deleted by the engine; the newest row wins.
CREATE TABLE corrections(
  id INTEGER PRIMARY KEY,
  page_id INTEGER NOT NULL REFERENCES pages(id),
  text TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
CREATE INDEX corrections_page ON corrections(page_id, id);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  state TEXT NOT NULL,
  params TEXT NOT NULL,
  started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  finished_at TEXT);
)SQL",
                                                R"SQL(
-- The reader's decoder state (page pointer, ring, gate), so a killed run resumes mid-volume.
CREATE TABLE decoder_state(
  id INTEGER PRIMARY KEY CHECK(id = 1),
  state BLOB NOT NULL,
  saved_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
)SQL",
                                                R"SQL(
-- The page the decoder state was saved with, and the inputs (the reader's visual tokens, float32)
-- of the pages in the decoder's context: a resumed run rebuilds from them the context it had.
ALTER TABLE decoder_state ADD COLUMN last_page_id INTEGER NOT NULL DEFAULT 0;
CREATE TABLE context_pages(idx INTEGER PRIMARY KEY, data BLOB NOT NULL);
)SQL",
                                                R"SQL(
-- Runs that crashed while this page was being read: a page that crashed the engine twice is
-- quarantined instead of ending every later run.
ALTER TABLE pages ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;
)SQL",
                                                R"SQL(
-- Why a page is flagged, in words, so the proofreader sees it (pages flagged earlier have none).
ALTER TABLE pages ADD COLUMN flag_reason TEXT;
)SQL",
                                                R"SQL(
-- The project's own dictionary: words the proofreader added (names, old spellings).
CREATE TABLE dictionary(
  word TEXT PRIMARY KEY,
  added_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
)SQL",
                                                R"SQL(
-- The user's arrangement of the book (page_arrangement.h): each page's place (book_order, numbered
-- 1.. in the order the pages had), pages taken out of the book (kept with their work, so the
-- removal can be undone), the turn given before reading, and the log that undoes each change.
ALTER TABLE pages ADD COLUMN book_order REAL;
ALTER TABLE pages ADD COLUMN removed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pages ADD COLUMN rotation INTEGER NOT NULL DEFAULT 0 CHECK(rotation IN (0, 90, 180, 270));
UPDATE pages SET book_order = r.n FROM (SELECT p.id, row_number() OVER (ORDER BY d.position, p.source_index, p.part) AS n
  FROM pages p JOIN documents d ON d.id=p.document_id) AS r WHERE r.id=pages.id;
CREATE TABLE arrangement_edits(
  id INTEGER PRIMARY KEY,
  action TEXT NOT NULL,
  summary TEXT NOT NULL,
  undo TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
)SQL",
                                                R"SQL(
-- A page read again keeps its earlier readings as versions (page_history.h). A re-read asked to
-- replace the page's corrections sets them aside: kept in the history, no longer its text.
CREATE TABLE readings(
  id INTEGER PRIMARY KEY,
  page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
  engine TEXT NOT NULL, engine_version TEXT NOT NULL, language TEXT NOT NULL,
  text TEXT NOT NULL, mean_confidence REAL NOT NULL,
  read_at TEXT NOT NULL,
  replaced_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
CREATE INDEX readings_page ON readings(page_id, id);
ALTER TABLE corrections ADD COLUMN set_aside INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pages ADD COLUMN reading_replaces_corrections INTEGER NOT NULL DEFAULT 0;
)SQL",
                                                R"SQL(
-- Regions drawn by hand on a page (page_region.h), in reading order; with them only they are read.
-- Kept with the turn the page had when they were drawn: after another turn they do not apply.
CREATE TABLE regions(
  id INTEGER PRIMARY KEY,
  page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  kind TEXT NOT NULL,
  rotation INTEGER NOT NULL,
  x INTEGER NOT NULL, y INTEGER NOT NULL, w INTEGER NOT NULL, h INTEGER NOT NULL);
CREATE INDEX regions_page ON regions(page_id, position);
)SQL"};

}  // namespace quire::sql
