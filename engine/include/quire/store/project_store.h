// The project file (*.quire): an SQLite database holding documents, pages, recognition results
// with their layout, the user's corrections and the run history. Every finished page is committed
// in one transaction, so a run killed at any moment resumes where it stopped.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "quire/core/decoder_checkpoint.h"
#include "quire/core/geometry.h"
#include "quire/core/status.h"

struct sqlite3;

namespace quire {

enum class PageStatus { Queued, Done, Failed };
const char* pageStatusName(PageStatus s);

struct DocumentRecord {
    int64_t id = 0;
    std::string path;  // absolute
    std::string kind;  // pdf, tiff, image, folder
    std::string sha256;
    int64_t sizeBytes = 0;
    int pageCount = 0;
    int position = 0;  // order in the book
};

struct PageRecord {
    int64_t id = 0;
    int64_t documentId = 0;
    int sourceIndex = 0;  // page index in the document
    int part = 0;         // 0 whole page; 1/2 left/right half of a split spread
    int sequence = 0;     // 1-based position in the book (filled by pages())
    std::string sourceFile;  // the file the pixels come from
    int filePage = 0;        // page index inside that file
    PageStatus status = PageStatus::Queued;
    bool flagged = false;
    std::string flagReason;  // why it is flagged, in words (FlagPolicy::reason, a doubt about the pixels)
    bool proofread = false;
    bool corrected = false;
    std::string failure;      // reason, for failed pages
    std::string failureKind;  // "input" or "engine"
    int width = 0, height = 0, dpi = 0;
    Box region;  // part of the source page this page covers
    double skewDegrees = 0;
    std::string preprocess;  // JSON parameters used
    std::string contentSha256;
    std::optional<std::string> textLayer;  // existing PDF text, when the page had one
    std::string header, footer, pageNumber;  // running header/footer found by book assembly
    double meanConfidence = 0;
    int crashes = 0;  // runs that crashed while this page was being read (reset when it is committed)
    int rotation = 0;  // clockwise degrees the user turned the page (page_arrangement.h), applied before reading
};

// What a worker produces for one region of a source page.
struct PageOutcome {
    PageText text;
    Box region;
    double skewDegrees = 0;
    std::string preprocess;
    std::string contentSha256;
    bool flagged = false;
    std::string flagReason;
    std::optional<std::string> textLayer;
    bool keptTextLayer = false;  // text is the PDF's own text layer, not recognised
};

struct ProjectCounts {
    int pages = 0, done = 0, queued = 0, failed = 0, flagged = 0, corrected = 0, proofread = 0;
};

// A page's effective text (corrections win over the engine's), for whole-book queries.
struct PageTextRecord {
    int64_t pageId = 0;
    int sequence = 0;
    std::string text;
};

struct CorrectionRecord {
    int64_t id = 0;
    int64_t pageId = 0;
    std::string text;
    std::string createdAt;
    bool setAside = false;  // a re-read's new reading became the text instead (page_history.h)
};

// The last decoder checkpoint saved, and the page it was saved with.
struct SavedDecoder {
    std::string state;
    int64_t lastPageId = 0;  // 0: saved on its own, not with a page
};

struct RunRecord {
    int64_t id = 0;
    std::string state;  // running, finished, cancelled
    std::string params;  // JSON
    std::string startedAt, finishedAt;
};

// The message for a project that fails its integrity check: what failed, and the newest sound
// backup with the command that restores it.
Status damagedProject(const std::filesystem::path& path, const std::string& detail);

class ProjectStore {
public:
    static constexpr int kSchemaVersion = 9;
    enum class Mode { OpenOrCreate, OpenExisting, ReadOnly };

    // Writable opens take the project's process lock: a second process is refused with a message
    // naming the holder. ReadOnly opens never lock.
    static Result<std::unique_ptr<ProjectStore>> open(const std::filesystem::path& path,
                                                      Mode mode = Mode::OpenOrCreate);
    ~ProjectStore();
    ProjectStore(const ProjectStore&) = delete;
    // restoreBackup (project_backups.h) under the project's process lock: refused while another
    // Quire process has the project open for writing.
    static Result<std::filesystem::path> restore(const std::filesystem::path& path, const std::filesystem::path& backup);
    ProjectStore& operator=(const ProjectStore&) = delete;

    const std::filesystem::path& path() const { return m_path; }
    bool readOnly() const { return m_readOnly; }

    // Documents and their pages.
    Result<std::optional<DocumentRecord>> findDocument(const std::string& absPath);
    Result<int64_t> addDocument(const DocumentRecord& doc, const std::vector<std::pair<std::string, int>>& pageFiles);
    // The file changed on disk: new hash, pages re-queued (corrections are kept).
    Status requeueDocument(int64_t documentId, const std::string& sha256, int64_t sizeBytes,
                           const std::vector<std::pair<std::string, int>>& pageFiles);
    Result<std::vector<DocumentRecord>> documents();

    Result<std::vector<PageRecord>> pages();  // book order
    Result<PageRecord> page(int64_t pageId);
    Result<std::vector<PageRecord>> queuedPages();
    // Stores the result of a page in one transaction. Two outcomes split the page into a spread.
    // A context-carrying engine's checkpoint, when given, is saved in the same transaction.
    Status saveResult(int64_t pageId, const std::vector<PageOutcome>& outcomes,
                      const DecoderCheckpoint* checkpoint = nullptr);
    Status saveFailure(int64_t pageId, const std::string& kind, const std::string& reason,
                       const DecoderCheckpoint* checkpoint = nullptr);
    Status requeueFailed();
    // Counts a crash on the listed pages (and the other parts of their source pages) that are still
    // queued: the pages a crashed run had begun and not committed (AttemptLog, CrashMarker).
    Status countCrashes(const std::vector<int64_t>& pageIds);
    // Queued pages that crashed `crashes` runs or more are marked failed ("the engine crashed N
    // times"); returned so the run can say which.
    Result<std::vector<PageRecord>> quarantineCrashedPages(int crashes);
    // A failed page queued again (its crashes forgotten); a queued page failed on the user's word.
    Status retryPage(int64_t pageId);
    Status skipPage(int64_t pageId);

    Result<PageText> layout(int64_t pageId);
    Result<std::string> engineText(int64_t pageId);
    // The corrected text when there is one, else the engine's text.
    Result<std::string> effectiveText(int64_t pageId);

    // Corrections: each edit is kept with its time; the newest one wins (corrections a re-read set
    // aside are kept, for the history, and no longer count).
    Result<int64_t> addCorrection(int64_t pageId, const std::string& text);
    Result<std::optional<CorrectionRecord>> latestCorrection(int64_t pageId);
    Result<std::vector<CorrectionRecord>> corrections(int64_t pageId);  // set aside ones too
    // Several pages' corrections in one transaction (a replace across the book); ids in order.
    Result<std::vector<int64_t>> addCorrections(const std::vector<std::pair<int64_t, std::string>>& edits);
    // Removes exactly these corrections: the undo of a user's own action (a replace across the
    // book). The engine never calls it.
    Status removeCorrections(const std::vector<int64_t>& ids);
    // Every page's effective text, in book order, in one query.
    Result<std::vector<PageTextRecord>> effectiveTexts();
    Status setProofread(int64_t pageId, bool proofread);

    Result<ProjectCounts> counts();

    // Runs: the parameters of the last run are kept so `transcribe` can resume it.
    Result<int64_t> beginRun(const std::string& paramsJson);
    Status finishRun(int64_t runId, const std::string& state);
    Result<std::optional<RunRecord>> lastRun();

    // The reader's decoder state (one per project), written with each committed page, and the
    // inputs of the pages in its context (context page `index`: float32 values).
    Status saveDecoderState(const DecoderCheckpoint& checkpoint, int64_t lastPageId = 0);
    Result<std::optional<SavedDecoder>> decoderState();
    Result<std::vector<float>> contextPage(int index);
    Status clearDecoderState();  // the state and the context pages

    // Words the user taught the project's spelling (names, old spellings); the exporters use them too.
    Result<std::vector<std::string>> projectWords();
    Status addProjectWord(const std::string& word);

    Result<std::string> meta(const std::string& key);
    Status setMeta(const std::string& key, const std::string& value);
    Result<std::string> integrityCheck();  // "ok" when sound

    // A rolling backup (project_backups.h) when the project changed and the newest backup is
    // kBackupInterval old; the committer calls it after each page, a correction calls it, and a
    // clean close takes one whenever anything changed.
    Status backupIfDue();
    // What opening had to repair (a hot journal rolled back), for the caller to report; empty when nothing.
    const std::string& openNote() const { return m_openNote; }

    sqlite3* handle() const { return m_db; }

private:
    ProjectStore() = default;
    Status exec(const char* sql);
    Status writeCheckpoint(const DecoderCheckpoint& checkpoint, int64_t lastPageId);  // inside a transaction
    // Fails every queued part of `p`'s source page with `reason` (a quarantine, a skip).
    Status failQueuedSourcePage(const PageRecord& p, const std::string& reason);

    sqlite3* m_db = nullptr;
    std::filesystem::path m_path;
    bool m_readOnly = false;
    bool m_locked = false;
    std::string m_openNote;
    int64_t m_changesAtBackup = 0;  // sqlite3_total_changes when the last backup was taken
    std::chrono::steady_clock::time_point m_lastBackup;
};

}  // namespace quire
