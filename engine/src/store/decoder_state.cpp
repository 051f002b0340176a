// ProjectStore's copy of the reader's context (decoder_state, context_pages): saved with each
// committed page, so that a killed or cancelled run is taken up where it ended.
#include "quire/store/project_store.h"

#include <cstring>

#include "store/sqlite_util.h"

namespace quire {

using sql::Stmt;
using sql::Transaction;

Status ProjectStore::writeCheckpoint(const DecoderCheckpoint& cp, int64_t lastPageId) {
    if (cp.restartPages)
        if (Status s = exec("DELETE FROM context_pages"); !s) return s;
    Stmt ins(m_db, "INSERT OR REPLACE INTO context_pages(idx, data) VALUES(?, ?)");
    for (size_t i = 0; i < cp.newPages.size(); ++i) {
        const auto& page = cp.newPages[i];
        ins.reset();
        ins.bind(1, cp.firstNewPage + int(i))
            .bindBlob(2, std::string(reinterpret_cast<const char*>(page.data()), page.size() * sizeof(float)));
        if (Status s = ins.run(); !s) return s;
    }
    Stmt q(m_db, "INSERT INTO decoder_state(id, state, last_page_id) VALUES(1, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                 "state=excluded.state, last_page_id=excluded.last_page_id, "
                 "saved_at=strftime('%Y-%m-%dT%H:%M:%fZ','now')");
    q.bindBlob(1, cp.state).bind(2, lastPageId);
    return q.run();
}

Status ProjectStore::saveDecoderState(const DecoderCheckpoint& checkpoint, int64_t lastPageId) {
    Transaction tx(m_db);
    if (!tx.status()) return tx.status();
    if (Status s = writeCheckpoint(checkpoint, lastPageId); !s) return s;
    return tx.commit();
}

Result<std::optional<SavedDecoder>> ProjectStore::decoderState() {
    Stmt q(m_db, "SELECT state, last_page_id FROM decoder_state WHERE id=1");
    if (q.step()) return std::optional<SavedDecoder>(SavedDecoder{q.blob(0), q.i64(1)});
    if (!q.status()) return q.status();
    return std::optional<SavedDecoder>();
}

Result<std::vector<float>> ProjectStore::contextPage(int index) {
    Stmt q(m_db, "SELECT data FROM context_pages WHERE idx=?");
    q.bind(1, index);
    if (!q.step()) {
        if (!q.status()) return q.status();
        return Status(ErrorCode::NotFound, m_path.string() + ": the decoder's context page " + std::to_string(index) +
                                               " is missing");
    }
    const std::string blob = q.blob(0);
    if (blob.size() % sizeof(float) != 0)
        return Status(ErrorCode::Corrupt, m_path.string() + ": the decoder's context page " + std::to_string(index) +
                                              " is damaged (" + std::to_string(blob.size()) + " bytes)");
    std::vector<float> out(blob.size() / sizeof(float));
    std::memcpy(out.data(), blob.data(), blob.size());
    return out;
}

Status ProjectStore::clearDecoderState() {
    Transaction tx(m_db);
    if (!tx.status()) return tx.status();
    if (Status s = exec("DELETE FROM decoder_state"); !s) return s;
    if (Status s = exec("DELETE FROM context_pages"); !s) return s;
    return tx.commit();
}

}  // namespace quire
