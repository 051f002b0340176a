// GreedySampler: the greedy pick with its n-gram ban, and the loop detector over recent tokens.
#include <algorithm>
#include <map>
#include <vector>

#include "quire/decoder/session.h"

namespace quire::decoder {

int GreedySampler::pick(const std::vector<float>& logits) const {
    std::vector<char> banned(logits.size(), 0);
    const int n = m_opt.noRepeatNgram;
    const int len = int(m_history.size());
    if (n > 0 && len >= n - 1) {
        // Every earlier occurrence of the last n-1 tokens bans the token that followed it.
        const int from = std::max(0, len - m_opt.ngramWindow);
        for (int s = from; s + n - 1 < len; ++s) {
            bool same = true;
            for (int j = 0; j < n - 1 && same; ++j) same = m_history[size_t(s + j)] == m_history[size_t(len - (n - 1) + j)];
            if (same) banned[size_t(m_history[size_t(s + n - 1)])] = 1;
        }
    }
    int best = -1;
    for (size_t i = 0; i < logits.size(); ++i)
        if (!banned[i] && (best < 0 || logits[i] > logits[size_t(best)])) best = int(i);
    return best;
}

int GreedySampler::memory() const {
    return std::max({m_opt.ngramWindow, m_opt.noRepeatNgram, m_opt.loopMaxPeriod * m_opt.loopMinRepeats, m_opt.loopMinSpan, 8});
}

void GreedySampler::push(int token) {
    m_history.push_back(token);
    // The rules look back `memory()` tokens at most: older ones are dropped (in bulk, so pushing
    // stays amortised constant time) and a volume's history does not grow without bound.
    const size_t keep = size_t(memory());
    if (m_history.size() >= 2 * keep) {
        const size_t dropped = m_history.size() - keep;
        m_history.erase(m_history.begin(), m_history.begin() + long(dropped));
        m_pageStart = m_pageStart > dropped ? m_pageStart - dropped : 0;
    }
}

int GreedySampler::loopSpan() const {
    const int len = int(m_history.size() - m_pageStart);
    for (int period = 1; period <= m_opt.loopMaxPeriod; ++period) {
        int need = period * m_opt.loopMinRepeats;
        if (need < 8) continue;
        need = std::max(need, m_opt.loopMinSpan);  // the repeats must cover this many tokens
        if (len < need) continue;
        bool periodic = true;
        const int* h = m_history.data() + m_pageStart;
        for (int i = len - need; i + period < len && periodic; ++i) periodic = h[i] == h[i + period];
        if (periodic) return need;
    }
    return 0;
}

}  // namespace quire::decoder
