// PageDecoding: the reader's decoding rules over one page's steps, and the page's words placed.
#include "page_decoding.h"

#include "decoder/kernels.h"
#include "quire/reader/layout_paragraph.h"
#include "quire/reader/page_end_hyphen.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace quire {

using namespace reader_vocab;

bool bringsVisualTokens(const PpocrLine& line) {
    return !line.charFrames.empty() && line.frames > 0 && !line.features.empty();
}

namespace {

// The front-end's reading of each visual token (the CTC character, the line end); none where the
// model takes no ids.
std::vector<int> frontEndIds(const std::vector<float>& visual, const decoder::ModelConfig& config, int count) {
    std::vector<int> ids;
    if (config.visualTokenIds)
        for (int t = 0; t < count; ++t) ids.push_back(int(visual[size_t(t) * config.visualStride() + config.visualDim]));
    return ids;
}

// Where each output character came from: a Levenshtein alignment of the output text with the
// front-end's CTC characters. Returns, per output character, the index of its CTC character or -1.
std::vector<int> alignToCtc(const std::vector<std::string>& out, const std::vector<std::string>& ctc) {
    const size_t n = out.size(), m = ctc.size();
    std::vector<int> aligned(n, -1);
    if (n == 0 || m == 0) return aligned;
    std::vector<uint16_t> cost((n + 1) * (m + 1));
    auto at = [&](size_t i, size_t j) -> uint16_t& { return cost[i * (m + 1) + j]; };
    for (size_t i = 0; i <= n; ++i) at(i, 0) = uint16_t(std::min<size_t>(i, 65535));
    for (size_t j = 0; j <= m; ++j) at(0, j) = uint16_t(std::min<size_t>(j, 65535));
    for (size_t i = 1; i <= n; ++i)
        for (size_t j = 1; j <= m; ++j)
            at(i, j) = uint16_t(std::min<int>({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (out[i - 1] == ctc[j - 1] ? 0 : 1), 65535}));
    size_t i = n, j = m;
    while (i > 0 && j > 0) {
        const int diag = at(i - 1, j - 1) + (out[i - 1] == ctc[j - 1] ? 0 : 1);
        if (at(i, j) == diag) {
            aligned[i - 1] = int(j - 1);
            --i, --j;
        } else if (at(i, j) == at(i - 1, j) + 1) {
            --i;
        } else {
            --j;
        }
    }
    return aligned;
}

// Per visual token of `page` (`count` of them): Tesseract's glyph where it differs from the
// front-end's character, as a vocabulary id (-1: none, the same, not in `idOf`), and its confidence.
void differingEvidence(const PpocrPage& page, const std::unordered_map<std::string, int>& idOf, size_t count,
                       std::vector<int>& ids, std::vector<float>& conf) {
    for (const auto& line : page.lines) {
        if (!bringsVisualTokens(line)) continue;
        for (size_t c = 0; c < line.charFrames.size(); ++c) {
            const auto it = c < line.evidence.size() ? idOf.find(line.evidence[c]) : idOf.end();
            const int id = it == idOf.end() || it->second == ReaderEngine::vocabId(line.charIds[c]) ? -1 : it->second;
            ids.push_back(id);
            conf.push_back(id >= 0 ? line.evidenceConf[c] : 0.f);
        }
        ids.push_back(-1);  // the line's end
        conf.push_back(0.f);
    }
    ids.resize(count, -1);
    conf.resize(count, 0.f);
}

// The page's text as lines and words with boxes: each written character placed at the visual token
// it attended to most where that is a character of the front-end, else by aligning the text with the
// front-end's characters; a word's confidence is its least certain character's.
void layoutWords(const PpocrPage& page, const PpocrEngine& ppocr, const std::vector<std::string>& characters,
                 const std::vector<int>& tokens, const std::vector<float>& probs, const std::vector<int>& attended, PageText& text) {
    std::vector<std::string> ctc;
    std::vector<std::pair<int, int>> ctcAt;  // (line, character) of each CTC character
    for (size_t l = 0; l < page.lines.size(); ++l)
        for (size_t c = 0; c < page.lines[l].charIds.size(); ++c) {
            ctc.push_back(ppocr.charOf(page.lines[l].charIds[c]));
            ctcAt.emplace_back(int(l), int(c));
        }
    std::vector<std::string> outChars;
    std::vector<int> outToken;  // index into tokens for each output character
    for (size_t k = 0; k < tokens.size(); ++k)
        if (tokens[k] >= kFirstChar) {
            outChars.push_back(characters[size_t(tokens[k])]);
            outToken.push_back(int(k));
        }
    // Each character's place: the visual token it attended to most (summed over layers and heads;
    // the reader's copy head looks at the character it writes), where that is a character; else
    // a Levenshtein alignment of the output with the front-end's characters.
    std::vector<int> visualToCtc;  // visual token (visualTokens() order) -> CTC character, or -1
    for (size_t l = 0, offset = 0; l < page.lines.size(); offset += page.lines[l].charIds.size(), ++l) {
        const PpocrLine& line = page.lines[l];
        if (!bringsVisualTokens(line)) continue;
        for (size_t c = 0; c < line.charFrames.size(); ++c) visualToCtc.push_back(int(offset + c));
        visualToCtc.push_back(-1);  // the line's end
    }
    std::vector<int> tokenToChar(tokens.size(), -1);
    std::vector<int> aligned;  // computed only if some character attended to no character
    for (size_t i = 0; i < outToken.size(); ++i) {
        const int v = attended[size_t(outToken[i])];
        int at = v >= 0 && v < int(visualToCtc.size()) ? visualToCtc[size_t(v)] : -1;
        if (at < 0) {
            if (aligned.empty()) aligned = alignToCtc(outChars, ctc);
            at = aligned[i];
        }
        tokenToChar[size_t(outToken[i])] = at;
    }

    int paragraph = 0, lastLine = page.lines.empty() ? -1 : 0;
    Line* current = nullptr;
    int currentSource = -2;
    auto flushWord = [&](Word& w, std::vector<int>& chars) {
        if (w.text.empty()) return;
        int srcLine = lastLine;
        float x0 = 1e30f, x1 = -1e30f;
        for (int ci : chars) {
            if (ci < 0) continue;
            const auto [l, c] = ctcAt[size_t(ci)];
            srcLine = l;
            const PpocrLine& pl = page.lines[size_t(l)];
            if (pl.frameX.empty()) continue;
            const float x = pl.xOfFrame(pl.charFrames[size_t(c)]);
            x0 = std::min(x0, x - pl.halfFrame());
            x1 = std::max(x1, x + pl.halfFrame());
        }
        if (srcLine >= 0 && srcLine < int(page.lines.size())) {
            const Box& lb = page.lines[size_t(srcLine)].box;
            if (x1 < x0) x0 = float(lb.x), x1 = float(lb.x + 1);
            w.box = {int(std::max(x0, float(lb.x))), lb.y, std::max(1, int(x1 - std::max(x0, float(lb.x)))), lb.h};
        }
        lastLine = srcLine;
        // A further piece of the printed line being written stays on it, as the PP-OCR path lays it out.
        const auto pieceOfCurrent = [&] {
            return currentSource >= 0 && srcLine >= 0 && size_t(srcLine) < page.lines.size() &&
                   continuesRow(page.lines[size_t(currentSource)].box, page.lines[size_t(srcLine)].box);
        };
        if (!current || current->paragraph != paragraph || (currentSource != srcLine && !pieceOfCurrent())) {
            text.lines.emplace_back();
            current = &text.lines.back();
            current->paragraph = paragraph;
            current->box = w.box;
        }
        currentSource = srcLine;
        current->words.push_back(w);
        current->box = current->box.united(w.box);
        w = Word{};
        chars.clear();
    };
    Word word;
    std::vector<int> wordChars;
    float wordMin = 1.f;
    for (size_t k = 0; k < tokens.size(); ++k) {
        const int t = tokens[k];
        if (t == kSpace || t == kLineBreak || t == kParagraph || t < kFirstChar) {
            word.confidence = 100.f * wordMin;
            flushWord(word, wordChars);
            wordMin = 1.f;
            if (t == kParagraph) ++paragraph;
            continue;
        }
        word.text += characters[size_t(t)];
        wordChars.push_back(tokenToChar[k]);
        wordMin = std::min(wordMin, probs[k]);
    }
    word.confidence = 100.f * wordMin;
    flushWord(word, wordChars);
}

}  // namespace

PageDecoding::PageDecoding(const Engine& engine, const PpocrPage& page, const std::vector<float>& visual, int pageNo,
                           decoder::GreedySampler& sampler, const decoder::DecodeSession& session,
                           std::function<void(const std::string&)> onText)
    : m_e(engine), m_page(page), m_visual(visual), m_pageNo(pageNo),
      m_count(int(visual.size()) / engine.config.visualStride()),
      m_cap(std::min(engine.options.greedy.maxTokensPerPage, 2 * m_count + 64)), m_sampler(sampler), m_session(session),
      m_onText(std::move(onText)), m_lineEnds(engine.config.lineAlignedPositions() && engine.config.visualTokenIds),
      m_visualIds(frontEndIds(visual, engine.config, m_count)), m_lineEndRule(m_visualIds), m_lineEndHyphen({}),
      m_printed({}, {}, -1, false), m_reread(m_count) {
    const auto& config = m_e.config;
    // Tesseract's glyph at each visual token where it differs from the front-end's character (-1:
    // none, the same, or not in the vocabulary), with its confidence: ReaderOptions::evidencePrior.
    if (m_e.options.evidencePrior > 0 && config.visualTokenIds)
        differingEvidence(page, m_e.idOf, m_visualIds.size(), m_evidenceIds, m_evidenceConf);
    // Per line with visual tokens: whether a wide white band sets the next one apart
    // (ReaderOptions::layoutParagraphs).
    std::vector<Box> boxes;
    std::vector<int> blocks;
    for (const auto& line : page.lines)
        if (bringsVisualTokens(line)) boxes.push_back(line.box), blocks.push_back(line.block);
    const int lineHeight = page.medianLineHeight();
    if (m_e.options.layoutParagraphs) m_laidApart = wideWhiteBands(boxes, lineHeight);
    // Per line with visual tokens: whether the next, in the same block, starts a paragraph as set
    // (ReaderOptions::typesetParagraphs).
    if (m_e.options.typesetParagraphs) {
        std::map<int, int> blockRight;
        for (size_t k = 0; k < boxes.size(); ++k) blockRight[blocks[k]] = std::max(blockRight[blocks[k]], boxes[k].right());
        // The detector cuts a justified line at a wide word space: a further piece of the row is
        // neither indented nor does it leave the piece before short, and a row of pieces is
        // stretched to its measure, so no paragraph's last line; the typesetting is judged on the
        // whole row. Not on the page's first row, where a running head and its folio stand apart.
        size_t firstRow = boxes.empty() ? 0 : 1;
        while (firstRow < boxes.size() && sameRow(boxes[0], boxes[firstRow])) ++firstRow;
        Box row;
        bool piece = false;  // line k continues the row of line k - 1
        for (size_t k = 0; k + 1 < boxes.size(); ++k) {
            row = piece ? row.united(boxes[k]) : boxes[k];
            const bool sameBlock = blocks[k] == blocks[k + 1];
            const bool on = sameBlock && k + 1 >= firstRow && continuesRow(boxes[k], boxes[k + 1]);
            const bool ends = sameBlock && !on && typesetParagraphEnd(row, boxes[k + 1], blockRight[blocks[k]], lineHeight);
            const bool apart = k < m_laidApart.size() && m_laidApart[k];
            m_typesetEnd.push_back(ends);
            m_noParagraph.push_back(on || (piece && sameBlock && !ends && !apart));
            piece = on;
        }
    }
    // Lines of a Latin script join with nothing only at a hyphen or a dash: on a page of such a
    // script (under a tenth of its letters CJK), where the front-end read a letter or digit at the
    // start of the next line and, at the end of this one, a letter, a digit or a mark that closes a
    // word or sentence (. , ; : ? ! ' " ’ ” ) ]), the end of a line the model wrote text on is a
    // space or a paragraph, never LINE_JOIN (the model, unsure of the two, joined "so long / that"
    // into "longthat" on a real magazine page, and "with me.” / My father" into "me.My" on a book
    // page). On a Chinese page lines join with nothing, table cells of figures included.
    const size_t n = m_visualIds.size();
    m_wordChar.assign(n, false);
    m_hyphen.assign(n, false);  // the front-end's hyphens (LineEndHyphen)
    m_digit.assign(n, false);   // its digits (a folio under the text: keepPageEndHyphen)
    m_endsWord.assign(n, false);  // a letter, a digit, or what closes a word or sentence
    std::vector<PrintedPunctuation::Kind> kinds(n, PrintedPunctuation::Other);
    int latinLetters = 0, cjkLetters = 0;
    for (size_t t = 0; t < n; ++t) {
        if (m_visualIds[t] == kSpace) kinds[t] = PrintedPunctuation::Space;
        if (m_visualIds[t] < kFirstChar || m_visualIds[t] >= kSkip) continue;
        const std::string ch = m_e.ppocr.charOf(m_visualIds[t] - kFirstChar + 1);
        m_wordChar[t] = isLatinWordCharacter(ch);
        m_hyphen[t] = ch == "-" || ch == "\u2010" || ch == "\u00ac";
        kinds[t] = PrintedPunctuation::kindOf(ch);
        m_digit[t] = kinds[t] == PrintedPunctuation::Digit;
        m_endsWord[t] = endsLatinWord(ch);
        latinLetters += m_wordChar[t] ? 1 : 0;
        cjkLetters += isCjkCharacter(ch) ? 1 : 0;
    }
    m_spacedScript = latinLetters > 0 && cjkLetters * 10 < latinLetters + cjkLetters;
    // Only on pages of a Latin script: Chinese sets its own full-width marks and dashes.
    m_printed = PrintedPunctuation(std::move(kinds), m_e.dashTokens, m_spacedScript ? m_e.emDash : -1,
                                   m_spacedScript && m_e.options.closeUpSpacing);
    m_lineEndHyphen = LineEndHyphen(m_hyphen);
    m_sampler.beginPage();
}

// A token of the text, written: to the repetition rules (they look at the text only), the page's
// tokens with its probability and the visual token it read, and the stream.
void PageDecoding::write(int token, float prob, int visual) {
    m_sampler.push(token);
    m_tokens.push_back(token);
    m_probs.push_back(prob);
    m_attended.push_back(visual);
    if (const std::string& text = textOf(token); m_onText && !text.empty()) m_onText(text);
}

const std::string& PageDecoding::textOf(int token) const {
    static const std::string paragraph = "\n\n", space = " ", none;
    if (token == kParagraph) return paragraph;
    if (token == kSpace || token == kLineBreak) return space;
    return token >= kFirstChar && size_t(token) < m_e.characters.size() ? m_e.characters[size_t(token)] : none;
}

PageDecoding::Outcome PageDecoding::step(const decoder::StepResult& step, int guess) {
    const auto& config = m_e.config;
    const auto& options = m_e.options;
    const std::vector<float>& logits = *step.logits;
    const bool early = m_lineEnds && options.lineEndRule && !m_lineEndRule.allowsLineEnd();
    const bool noSkip = m_lineEnds && options.skipRule && !m_lineEndRule.allowsSkip();
    const int lineEndsLeft = m_session.lineEndsLeft();  // the page's, before this step's pick
    // Training ends a page only after its last line end: no page end while line ends are left.
    const bool noEnd = m_lineEnds && options.wholePageRule && lineEndsLeft > 0;
    const auto [lineLast, nextFirst] = m_lineEnds ? m_lineEndRule.junction() : std::pair<int, int>{-1, -1};
    const bool noJoin = m_lineEnds && options.joinRule && m_spacedScript && m_lineHasText && !early && lineLast >= 0 &&
                        nextFirst >= 0 && m_endsWord[size_t(lineLast)] && m_wordChar[size_t(nextFirst)];
    // The front-end's reading of the next visual token gets `draftPrior` nats, times the front-end's
    // probability of it, before the pick (every kind of line end where the visual token is one):
    // where the model is unsure, what the front-end saw clearly wins. Confidences stay the model's
    // own, so a word written against the model's choice is flagged (docs/DECODING.md).
    const bool prior = options.draftPrior > 0 && guess >= 0;
    const int evidence = guess >= 0 && size_t(guess) < m_evidenceIds.size() ? m_evidenceIds[size_t(guess)] : -1;
    const bool bias = early || noSkip || noEnd || prior || noJoin || evidence >= 0 || !m_e.unwritten.empty();
    if (bias) {
        m_biased = logits;
        constexpr float kBanned = -std::numeric_limits<float>::infinity();
        for (int id : m_e.unwritten) m_biased[size_t(id)] = kBanned;
        if (early)
            for (int id : config.lineEndTokenIds) m_biased[size_t(id)] = kBanned;
        if (noJoin) m_biased[size_t(kLineJoin)] = kBanned;
        if (noSkip) m_biased[size_t(kSkip)] = kBanned;
        if (noEnd) m_biased[size_t(kPageBreak)] = m_biased[size_t(kEos)] = kBanned;
        if (prior) {
            const int id = m_visualIds[size_t(guess)];
            if (config.isLineEnd(id))
                for (int e : config.lineEndTokenIds) m_biased[size_t(e)] += options.draftPrior;
            else  // weighted by the front-end's own probability of its character; more where the model hardly knows it
                m_biased[size_t(id)] += (size_t(id) < m_e.rare.size() && m_e.rare[size_t(id)] ? options.rarePrior : options.draftPrior) *
                                        m_visual[size_t(guess) * config.visualStride() + kCharProb];
        }
        if (evidence >= 0) m_biased[size_t(evidence)] += options.evidencePrior * m_evidenceConf[size_t(guess)];
    }
    int picked = m_sampler.pick(bias ? m_biased : logits);
    const size_t line = size_t(m_lineEndRule.line());
    if (m_lineEnds && picked >= 0) picked = layoutParagraph(picked, config.isLineEnd(picked), m_textSinceBreak, m_laidApart, line);
    const int hyphenBack = m_lineEnds && options.hyphenRule
                               ? m_lineEndHyphen.pick(picked, guess, lineLast, picked >= 0 && config.isLineEnd(picked))
                               : -1;
    const int next = m_chosen = picked >= 0 ? m_printed.pick(picked, guess) : picked;
    const bool nextIsLineEnd = next >= 0 && config.isLineEnd(next);
    m_lineEndRule.push(nextIsLineEnd);
    if (nextIsLineEnd) m_lineHasText = false;
    else if (next >= 0 && next != kSkip) m_lineHasText = true;
    if (nextIsLineEnd && next != kLineJoin) m_textSinceBreak = false;
    else if (next >= 0 && next != kSkip && !nextIsLineEnd) m_textSinceBreak = true;
    m_chosenFrom = step.attendedVisual;
    if (next < 0) {
        m_failure = "decoding stopped: every token was banned by the repetition rule";
        return Outcome::Failed;
    }
    const float mx = decoder::kernels::maxOf(logits.data(), logits.size());
    const float prob = std::exp(logits[size_t(picked)] - mx) / decoder::kernels::sumExpShifted(logits.data(), logits.size(), mx);
    ++m_steps;
    if (next == kPageBreak || next == kEos) return Outcome::Done;
    if (m_steps >= m_cap) {
        m_failure = "the page reached the token cap (" + std::to_string(m_cap) + " tokens for " + std::to_string(m_count) +
                    " visual tokens)";
        return Outcome::Failed;
    }
    // With line-aligned positions the reader writes one line end per visual line end, so the
    // page's text is complete once it has written the last one (docs/DECODING.md): decoding
    // stops there rather than letting the model write on past the page's visual tokens.
    const bool pageDone = nextIsLineEnd && lineEndsLeft == 1;
    if (pageDone && next == kLineJoin) return Outcome::Done;
    // A visual token that is not reading text, or lines joined with nothing: nothing to write.
    if (next == kSkip || next == kLineJoin) return Outcome::Go;
    if (hyphenBack >= 0 && !m_printed.inWrittenDash(hyphenBack)) write(m_visualIds[size_t(hyphenBack)], prob, hyphenBack);
    write(next, prob, step.attendedVisual);
    if (next == kLineBreak || next == kParagraph) m_writtenEnds.emplace_back(m_tokens.size() - 1, int(line));
    m_reread.push(step.attendedVisual);
    if (const int span = m_sampler.loopSpan(); span > 0) {
        m_failure = loopFailure(span);
        return Outcome::Failed;
    }
    if (m_reread.looping()) {
        m_failure = "decoding loop: the reader went back over lines it had already written (page " +
                    std::to_string(m_pageNo + 1) + ", " + std::to_string(m_reread.reread()) + " of " +
                    std::to_string(m_tokens.size()) + " tokens re-read)";
        return Outcome::Failed;
    }
    return pageDone ? Outcome::Done : Outcome::Go;
}

// What a loop looked like: how many of its last `span` written tokens are the front-end's reading
// of the visual token each attended (a page that prints a repetition agrees; the loops seen on
// generated pages, runs of a rule character over text, agreed 0 of 64), and the text it repeated.
std::string PageDecoding::loopFailure(int span) const {
    const size_t from = m_tokens.size() - size_t(std::min<size_t>(size_t(span), m_tokens.size()));
    int agree = 0;
    for (size_t i = from; i < m_tokens.size(); ++i) {
        const int v = m_attended[i];
        agree += v >= 0 && size_t(v) < m_visualIds.size() && m_visualIds[size_t(v)] == m_tokens[i];
    }
    std::string tail;  // the last 24 tokens of the repeats, on one line
    for (size_t i = m_tokens.size() - std::min<size_t>(24, m_tokens.size() - from); i < m_tokens.size(); ++i)
        tail += m_tokens[i] == kParagraph ? " " : textOf(m_tokens[i]);
    return "decoding loop: the output repeats itself (page " + std::to_string(m_pageNo + 1) + ", " + std::to_string(m_steps) +
           " tokens; " + std::to_string(agree) + " of the last " + std::to_string(m_tokens.size() - from) +
           " agree with the front-end's reading): \"" + tail + "\"";
}

// The visual token the next written token reads: the one after the token the last one attended
// to most, held to the line being written where the decoder has line ends (attention that jumped
// back to a similar line must not pull the prior and the draft with it: with them following
// attention, a chart's axis labels on a real page were copied again and again).
int PageDecoding::nextGuess() const {
    if (m_lineEnds) return m_lineEndRule.nextGuess(m_chosenFrom);
    return m_chosenFrom >= 0 ? m_chosenFrom + 1 : int(m_visualIds.size());
}

void PageDecoding::finish(PageText& text) {
    // A line end the model wrote as a space where the typesetting ends the paragraph: a paragraph;
    // one it wrote as a paragraph where the printed line goes on, or after a row stretched to its
    // measure that the typesetting does not end (a justified line the detector cut at wide word
    // spaces, each piece short): a space. After decoding, not fed to the model, so the characters
    // stay as read.
    for (const auto& [k, line] : m_writtenEnds) {
        const size_t l = size_t(line);
        if (m_tokens[k] == kLineBreak && l < m_typesetEnd.size() && m_typesetEnd[l]) m_tokens[k] = kParagraph;
        else if (m_tokens[k] == kParagraph && l < m_noParagraph.size() && m_noParagraph[l]) m_tokens[k] = kLineBreak;
    }
    if (m_e.options.pageEndHyphen && m_spacedScript && m_lineEnds) {
        const int stride = m_e.config.visualStride();
        keepPageEndHyphen(m_visualIds, m_wordChar, m_hyphen, m_digit, [&](size_t v) { return m_visual[v * size_t(stride) + kCharProb]; },
                          m_tokens, m_probs, m_attended);
    }
    layoutWords(m_page, m_e.ppocr, m_e.characters, m_tokens, m_probs, m_attended, text);
}

}  // namespace quire
