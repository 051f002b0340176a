// Quire's reader: the SR-SWA decoder reading a volume continuously over the PP-OCR front-end's
// visual tokens (docs/TRAINING.md). Pages are given in order; the decoder keeps its context (the
// window of pages, gated earlier pages, its recent output) across page breaks.
//
// Visual tokens, one per character the front-end's CTC emitted, in reading order, and one at the
// end of each line: the recognizer's 120 features at the character's frame (zeros for a line
// end), the character's probability, line-start and line-end flags, and the line's vertical place
// on the page (0..1) — exactly what tools/train/data.py builds from `quire-cli features`. Models
// with `visual_token_ids` also get the token's reader-vocabulary id after the 124 values (the CTC
// character; a restored space is the space token, a line end the line-break token).
//
// The reader writes the page's reading text laid along the visual tokens (tools/train/data.py,
// aligned_output): mostly one token per visual token — the text it stands for, or SKIP for a token
// that is not reading text (running head, folio, a line-end hyphen). SKIP is not text.
#pragma once

#include <algorithm>
#include <atomic>
#include <cctype>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>

#include "quire/decoder/session.h"
#include "quire/core/decoder_checkpoint.h"
#include "quire/core/geometry.h"
#include "quire/ppocr/ppocr.h"
#include "quire/core/status.h"

namespace quire {

class ReaderSharing;

// Vocabulary of the reader (tools/train/data.py): specials, then PP-OCR's characters, SKIP and
// LINE_JOIN, then (models of kVocabSize; those of kBaseVocabSize end before) the letters and marks
// of German print that PP-OCR's keys lack, so a model can write what Tesseract's evidence reads.
namespace reader_vocab {
constexpr int kUnknown = 0, kBos = 1, kEos = 2, kPageBreak = 3, kParagraph = 4, kLineBreak = 5, kSpace = 6,
              kFirstChar = 7;
constexpr int kKeyCount = 6623;                // PP-OCR's characters (ppocr_keys_v1.txt)
constexpr int kSkip = kFirstChar + kKeyCount;  // "this visual token is not reading text"
constexpr int kLineJoin = kSkip + 1;            // a line end where the lines join with nothing
constexpr int kFirstExtra = kLineJoin + 1;
constexpr const char* kExtraCharacters[] = {"\u00f6", "\u00d6", "\u00c4", "\u00df", "\u017f",  // ö Ö Ä ß ſ
                                            "\u201e", "\u201a", "\u2013", "\u00ab"};            // „ ‚ – «
// German print's letters that English print does not use, not written on English pages
// (ReaderOptions::unwritten).
constexpr const char* kNotEnglish[] = {"\u017f", "\u00df", "\u201e", "\u201a"};  // ſ ß „ ‚
// Box drawing (U+2500-U+257F, "─ │ ├ ┌"): what terminals draw tables with, not what books print
// (a printed rule is a line, not characters). Not written unless ReaderOptions::boxDrawing.
inline bool isBoxDrawing(const std::string& ch) {
    return ch.size() == 3 && static_cast<unsigned char>(ch[0]) == 0xE2 &&
           (static_cast<unsigned char>(ch[1]) == 0x94 || static_cast<unsigned char>(ch[1]) == 0x95);
}
constexpr int kBaseVocabSize = kFirstExtra;
constexpr int kVocabSize = kFirstExtra + int(std::size(kExtraCharacters));
constexpr int kVisualDim = 124;
// Models that read Tesseract's evidence (visual_evidence_ids): three more values a visual token, two
// evidence ids (ReaderEngine::visualTokens).
constexpr int kEvidenceValues = 3, kEvidenceIds = 2;
constexpr int kCharProb = 120;  // where a visual token holds its character's probability
}  // namespace reader_vocab

// The reader model folder: `explicitDir` if given (and then only it; quire-cli and the GUI pass
// $QUIRE_READER_MODEL here), else `quire/models/reader` under $XDG_DATA_HOME (~/.local/share), /usr/local/share and
// /usr/share (where the package installs the shipped model), else the source tree's
// resources/models/reader (a build run in place). NotFound lists the places tried.
Result<std::string> findReaderModel(const std::string& explicitDir = {});

// Decoding rules for character tokens: an n-gram ban of 35 characters (Unlimited-OCR's 35 are
// subword tokens) would forbid a Bible verse's repeated phrase, and eight dots of a table of
// contents' leader are no loop. The token cap per page is the smaller of maxTokensPerPage and
// twice the page's visual tokens plus 64 (the reader writes about one token per visual token).
inline decoder::GreedyOptions readerGreedyDefaults() {
    decoder::GreedyOptions g;
    g.noRepeatNgram = 120;
    g.ngramWindow = 4096;
    g.maxTokensPerPage = 16384;
    g.loopMinRepeats = 4;
    g.loopMaxPeriod = 64;
    g.loopMinSpan = 64;
    return g;
}

// A letter or digit of a script written with spaces between words (one UTF-8 character): ASCII,
// or two-byte UTF-8 from À on (Latin-1 and Latin Extended, Greek, Cyrillic), but × and ÷. Lines of
// such scripts join with nothing only at a hyphen or a dash (ReaderEngine's line-end rule).
inline bool isLatinWordCharacter(const std::string& ch) {
    if (ch.empty()) return false;
    const auto c = static_cast<unsigned char>(ch[0]);
    if (c < 0x80) return ch.size() == 1 && std::isalnum(c) != 0;
    if (ch.size() != 2) return false;
    const int code = ((c & 0x1F) << 6) | (static_cast<unsigned char>(ch[1]) & 0x3F);
    return code >= 0xC0 && code != 0xD7 && code != 0xF7;
}

// What a line of a Latin script may end with where the next line starts a new word: a letter or
// digit (isLatinWordCharacter), or a mark that closes a word or sentence: . , ; : ? ! ' " ’ ” ) ].
// Not a hyphen or dash (a word or sentence goes on), nor a slash.
inline bool endsLatinWord(const std::string& ch) {
    if (isLatinWordCharacter(ch)) return true;
    for (const char* c : {".", ",", ";", ":", "?", "!", "'", "\"", "\u2019", "\u201d", ")", "]"})
        if (ch == c) return true;
    return false;
}

// A character of a script written without spaces (one UTF-8 character from U+2E80 on: CJK
// ideographs and punctuation, kana, Hangul, fullwidth forms).
inline bool isCjkCharacter(const std::string& ch) {
    if (ch.size() < 3) return false;
    const auto c0 = static_cast<unsigned char>(ch[0]), c1 = static_cast<unsigned char>(ch[1]);
    if (c0 >= 0xF0) return true;  // four bytes: beyond the Basic Multilingual Plane
    const int code = ((c0 & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (static_cast<unsigned char>(ch[2]) & 0x3F);
    return code >= 0x2E80;
}

// The reader's attention (docs/DECODING.md, The reader's window): the current page's visual
// tokens, blocks of earlier pages that the page gate and token selector pick, and its recent
// output; no earlier page whole. The shipped model was trained on short pages; with a whole
// previous page of a real book in view it lost its place in lines (a character written twice where
// a space belongs), so the window is the current page alone. Pages are fed one at a time, so
// nothing lies after it either. RecognizerOptions::readerTuning sets the pages before the current
// one and the gated pages, for measurement.
inline decoder::AttentionParams readerAttentionDefaults() {
    decoder::AttentionParams a;
    a.windowBefore = 0;
    a.windowAfter = 0;
    return a;
}

// A model trained under the runtime's SR-SWA (ModelConfig::srswa) runs with the pattern it was
// trained with: its window (look-ahead included), gate and selector budgets and recent tokens
// replace those of `a`. A model without one keeps `a`.
inline void useTrainedPattern(decoder::AttentionParams& a, const decoder::ModelConfig& c) {
    if (!c.srswa) return;
    const decoder::TrainedPattern& t = *c.srswa;
    a.windowBefore = t.windowBefore, a.windowAfter = t.windowAfter;
    a.gatedPages = t.gatedPages, a.blocksPerGatedPage = t.blocksPerGatedPage;
    a.gateRefreshSteps = t.gateRefreshSteps, a.gateQueryTokens = t.gateQueryTokens, a.gateHold = t.gateHold;
    a.recentTokens = t.recentTokens;
}

// A loop the repetition rules miss: the reader copying again, in shrinking pieces, lines it has
// already written. It shows in the visual token each written token attended to most
// (StepResult::attendedVisual): reading goes forward along the page, so tokens written while
// attending more than `kBehind` tokens behind the furthest point reached are re-read. More than
// max(kMinTokens, kShare × the page's visual tokens) of them is a decoding loop. Measured on
// real pages (docs/DECODING.md): 0–51 such tokens (at most 1.3 %) on pages read well, 201 of 820
// (25 %) on a page read in repeated pieces.
class RereadDetector {
public:
    static constexpr int kBehind = 16, kMinTokens = 64;
    static constexpr double kShare = 0.1;
    explicit RereadDetector(int visualTokens) : m_limit(std::max(kMinTokens, int(kShare * visualTokens))) {}
    void push(int attendedVisual) {
        if (attendedVisual < 0) return;
        if (attendedVisual < m_furthest - kBehind) ++m_reread;
        m_furthest = std::max(m_furthest, attendedVisual);
    }
    int reread() const { return m_reread; }
    bool looping() const { return m_reread > m_limit; }

private:
    int m_limit, m_furthest = -1, m_reread = 0;
};

// No line end before a line's visual tokens are all written for. The reader is trained to write
// at least one token for each visual token of a line (its text, or SKIP) before the line's end
// (tools/train/data.py, aligned_output); a line end written earlier drops the rest of the line
// from the text (seen on a real page at a dash in mid-line). `visualIds`: the front-end's ids of
// a page's visual tokens, kLineBreak at each line's end. Past the last line end, anything goes.
// The rule also knows which line is being written, so it says which visual token the next
// written token should read (`nextGuess`).
class LineEndRule {
public:
    explicit LineEndRule(const std::vector<int>& visualIds) : m_count(int(visualIds.size())) {
        int start = 0;
        for (size_t t = 0; t < visualIds.size(); ++t)
            if (visualIds[t] == reader_vocab::kLineBreak) m_start.push_back(start), start = int(t) + 1;
        m_start.push_back(start);  // past the last line end
    }
    bool allowsLineEnd() const { return m_line + 1 >= m_start.size() || m_written >= length(); }
    // SKIP stands for one visual token not read as text, so a line takes no SKIP once its tokens
    // outnumber its visual tokens by kSkipSlack: the model must write text or end the line. A model
    // that skipped on, past every token of the line, ran pages into the token cap and lost them
    // (docs/ACCURACY.md, 2026-12-03: show-through read as junk lines, crops wider than trained).
    static constexpr int kSkipSlack = 8;
    bool allowsSkip() const { return m_line + 1 >= m_start.size() || m_written < length() + kSkipSlack; }
    int line() const { return int(m_line); }  // the line being written, among the lines with visual tokens
    // Each token written (SKIP included): a line end moves to the next line.
    void push(bool lineEnd) {
        if (lineEnd) ++m_line, m_written = 0;
        else ++m_written;
    }
    // The visual token the next written token reads, given the one the last token attended to
    // most (-1: none). Reading goes on from there while that stays inside the line being written,
    // which follows a character the front-end missed or merged; attention that left the line (a
    // similar line earlier on the page) does not move the reading place: the line's next token by
    // count is read instead (its end once the count passes it). Past the last line end: the end
    // of the page (`visualIds.size()`).
    int nextGuess(int attended) const {
        if (m_line + 1 >= m_start.size()) return m_count;
        const int start = m_start[m_line], end = start + length();  // end: the line's end token
        if (attended + 1 >= start && attended + 1 <= end) return attended + 1;
        return std::min(start + m_written, end);
    }

    // Where the line being written meets the next: its last visual token before the line end and
    // the next line's first (-1 where the line or the next one has none, or at the page's end).
    std::pair<int, int> junction() const {
        if (m_line + 2 >= m_start.size()) return {-1, -1};
        const int end = m_start[m_line] + length();
        const bool nextHasTokens = m_start[m_line + 2] - 1 > m_start[m_line + 1];
        return {length() > 0 ? end - 1 : -1, nextHasTokens ? m_start[m_line + 1] : -1};
    }

private:
    int length() const { return m_start[m_line + 1] - 1 - m_start[m_line]; }  // its end not counted
    std::vector<int> m_start;  // first visual token of each line, then one past the last line end
    int m_count;
    size_t m_line = 0;
    int m_written = 0;
};

// A hyphen the front-end read at the end of a line is dropped only where the line joins the next
// (the word goes on there). Where the model skipped it and then ended the line with a break or a
// paragraph, the hyphen is written back before that line end: the halves stay apart and the
// hyphen printed between them stays ("weath- ered", not "weath ered", seen on a real magazine
// page). `hyphen`: per visual token, whether the front-end read a hyphen there.
class LineEndHyphen {
public:
    explicit LineEndHyphen(std::vector<bool> hyphen) : m_hyphen(std::move(hyphen)) {}
    // Each token picked: `next` the token, `guess` the visual token it read (-1: none), `lineLast`
    // the last visual token of the line being written (-1: none). Returns the visual token of the
    // hyphen to write before `next`, or -1.
    int pick(int next, int guess, int lineLast, bool nextIsLineEnd) {
        const int back = nextIsLineEnd && next != reader_vocab::kLineJoin ? m_skipped : -1;
        m_skipped = next == reader_vocab::kSkip && guess >= 0 && guess == lineLast && size_t(guess) < m_hyphen.size() &&
                            m_hyphen[size_t(guess)]
                        ? guess
                        : -1;
        return back;
    }

private:
    std::vector<bool> m_hyphen;
    int m_skipped = -1;  // a line-final hyphen the model skipped, until the next token
};

// Spacing and dashes of print that the front-end reads as characters, written as reading text on
// pages of a Latin script (docs/DECODING.md, Printed spacing and dashes):
// - Books into the 19th century set a space before ; : ? ! and after opening quotation marks
//   ("their prey ; as", "“ Will he"); the front-end reads it as a space. Where the model writes
//   a space the front-end read between a letter and ; : ? !, or just after an opening “ ‘ ( [ the
//   model wrote, it is SKIP (not reading text). After a digit ("3 : 4", a ratio) it stays, as do
//   spaces around straight quotes and ’ (which open and close: "rock ’n’ roll").
// - A long dash the front-end read as two or three dash characters in a row, one of them a long
//   dash ("—-", "-—", "——"), is one em dash: the first the model writes of the run is "—", the
//   rest are SKIP. Hyphens alone stay as read: "--" is how typewriters and some printers set a
//   dash, and the training targets keep it; so do a single dash and longer runs (rules, leaders).
// French sets a space before ; : ? ! by rule: the reader turns the spacing part off for it.
class PrintedPunctuation {
public:
    // Per visual token, what the front-end read there (Space: its space class, which has no
    // character; the others by kindOf).
    enum Kind : char { Other = 0, Letter, Digit, Space, Closing /* ; : ? ! */, Opening /* “ ‘ ( [ */, Dash /* - ‐ */,
                       LongDash /* – — ― */ };
    // `dashTokens`: the vocabulary ids of dash characters; `emDash`: the id of "—" (-1: the dash
    // rule is off); `spacing`: the spacing rule on.
    PrintedPunctuation(std::vector<Kind> kinds, std::vector<int> dashTokens, int emDash, bool spacing)
        : m_kind(std::move(kinds)), m_dash(std::move(dashTokens)), m_emDash(emDash), m_spacing(spacing) {}

    // The token to take in place of the model's pick `next`, `guess` the visual token it read
    // (-1: none). Every pick goes through here, in order.
    int pick(int next, int guess) {
        using namespace reader_vocab;
        const int taken = rule(next, guess);
        if (taken != kSkip) {  // what the page's text now ends with
            m_lastWritten = taken;
            m_lastAt = guess;
        }
        return taken;
    }

    // Whether visual token `v` is part of a dash run already written as "—" (a line-final hyphen
    // of "—-" the model skipped is not written back after it: LineEndHyphen).
    bool inWrittenDash(int v) const { return m_emRun >= 0 && v >= m_emRun && v <= m_emRunLast; }

    // What one front-end character is, for the rules.
    static bool isDash(const std::string& ch) {
        return ch == "-" || ch == "\u2010" || ch == "\u2013" || ch == "\u2014" || ch == "\u2015";
    }
    static Kind kindOf(const std::string& ch) {
        if (ch.size() == 1 && std::isdigit(static_cast<unsigned char>(ch[0]))) return Digit;
        if (isLatinWordCharacter(ch)) return Letter;
        if (ch == ";" || ch == ":" || ch == "?" || ch == "!") return Closing;
        if (ch == "\u201c" || ch == "\u2018" || ch == "(" || ch == "[") return Opening;
        if (ch == "-" || ch == "\u2010") return Dash;
        return isDash(ch) ? LongDash : Other;
    }

private:
    Kind kind(int v) const { return v >= 0 && size_t(v) < m_kind.size() ? m_kind[size_t(v)] : Other; }
    bool isDashToken(int token) const { return std::find(m_dash.begin(), m_dash.end(), token) != m_dash.end(); }
    int rule(int next, int guess) {
        using namespace reader_vocab;
        if (m_spacing && next == kSpace && kind(guess) == Space) {
            if (kind(guess - 1) == Letter && kind(guess + 1) == Closing) return kSkip;
            if (kind(guess - 1) == Opening && m_lastAt == guess - 1 && m_lastWritten >= kFirstChar) return kSkip;
        }
        const auto dash = [&](int v) { return kind(v) == Dash || kind(v) == LongDash; };
        if (m_emDash >= 0 && isDashToken(next) && dash(guess)) {
            int first = guess, last = guess;
            while (dash(first - 1)) --first;
            while (dash(last + 1)) ++last;
            bool long_ = false;
            for (int v = first; v <= last; ++v) long_ = long_ || kind(v) == LongDash;
            if (long_ && (last - first == 1 || last - first == 2)) {
                if (m_emRun == first) return kSkip;  // the run's em dash is written
                m_emRun = first;
                m_emRunLast = last;
                return m_emDash;
            }
        }
        return next;
    }

    std::vector<Kind> m_kind;
    std::vector<int> m_dash;
    int m_emDash;
    bool m_spacing;
    int m_lastWritten = -1, m_lastAt = -1;  // the last token taken that was not SKIP, and its visual token
    int m_emRun = -1, m_emRunLast = -1;     // the dash run written as "—", its first and last visual token
};

struct ReaderOptions {
    std::string modelDir;  // config.json + model.safetensors (docs/MODEL_FORMAT.md); empty: findReaderModel()
    // The front-end's options; its lines per recognizer call are the model's front_end_line_batch
    // (the batch its visual tokens were made with) unless frontEndLineBatch (measurements) is set.
    PpocrOptions ppocr;
    int frontEndLineBatch = 0;
    // maxPageTokens is raised to fit pages; a model with a trained pattern replaces the budgets
    // (useTrainedPattern), then the overrides below apply.
    decoder::AttentionParams attention = readerAttentionDefaults();
    // Measurement: pages before and after the current one in the window and gated pages, over the
    // model's pattern (-1: the model's, or attention's for a model without one).
    int windowBefore = -1, windowAfter = -1, gatedPages = -1;
    decoder::GreedyOptions greedy = readerGreedyDefaults();
    // Verify the front-end's characters as a draft, many tokens per pass (DecodeSession::stepDraft):
    // the same text as one token at a time, faster.
    bool draft = true;
    // Nats added to the logit of the front-end's reading of the next visual token, times the
    // front-end's probability of it, before the greedy pick (docs/DECODING.md, The reader's
    // choices); 0: the model alone (no rare-character prior either). Chosen on held-out synthetic
    // pages.
    float draftPrior = 1.5f;
    // Characters the model saw fewer than `rareBelow` times in training (character_counts.tsv beside
    // the model, docs/MODEL_FORMAT.md) get `rarePrior` nats instead, times the same probability: the
    // model's preference against a character it hardly knows is uninformed (it wrote 锁 for 陕 and
    // 泊 for 沪, characters it never saw). Without the file the rule is off. Chosen on held-out
    // synthetic pages.
    int rareBelow = 30;
    float rarePrior = 12.f;
    // Nats added to the logit of Tesseract's glyph at the next visual token (PpocrLine::evidence),
    // times Tesseract's confidence in it, where it differs from the front-end's character; 0: off.
    // The reader's recognizer runs Tesseract beside the front-end only when this is above 0 and
    // fills the evidence; readPage() and encode() alone bring none.
    float evidencePrior = 0.f;
    // Old books' spaces before ; : ? ! and after opening quotation marks dropped on pages of a Latin
    // script (PrintedPunctuation; never for French, which sets them by rule). Found on
    // ../shared/eval pages and not validated elsewhere (the generated pages have no such spacing),
    // so off; kept for measurement.
    bool closeUpSpacing = false;
    // A long dash the front-end read as two or three dashes is written as one "—" (PrintedPunctuation).
    bool joinDashes = true;
    // The line rules (docs/ACCURACY.md, 2026-12-03): no line end before the line's visual tokens are
    // written for (LineEndRule: on, it lowers the errors on generated held-out Chinese pages); a
    // line-end hyphen written back where the line does not join the next (LineEndHyphen) and no
    // joining with nothing of two lines of a Latin script that end and begin a word (the line-join
    // rule of PageDecoding::step) were found by reading errors on ../shared/eval pages and did not lower
    // the errors on generated held-out pages, so they are off, kept for measurement.
    bool lineEndRule = true;
    // No SKIP past a line's visual tokens (LineEndRule::allowsSkip): on, found and measured on
    // generated held-out pages.
    bool skipRule = true;
    // No page end (PAGE_BREAK, EOS) while the page has visual line ends left to write: training
    // ends a page only after its last line end, and a model that ended one early left the rest of
    // a generated held-out page unread, with no failure to show it (docs/ACCURACY.md, 2026-12-07).
    bool wholePageRule = true;
    bool hyphenRule = false;
    bool joinRule = false;
    // A line of text set apart from the next by a wide white band (wideWhiteBands: a running head, a
    // heading) ends its paragraph, whatever line end the model wrote there: a running head the model
    // wrote ran into the body's first sentence ("THE BINDER'S GUIDEcovered in calf") without it.
    bool layoutParagraphs = true;
    // A line end the model wrote as a space becomes a paragraph where the typesetting ends one
    // (typesetParagraphEnd: the next line indented, or this one short of its block's right edge),
    // after decoding. The model sees no line's left or right edge, only its text.
    bool typesetParagraphs = true;
    // A word broken over the page break keeps its hyphen where the page's written text ends
    // (keepPageEndHyphen, page_end_hyphen.h), so that the book's assembly can join its halves.
    bool pageEndHyphen = true;
    // Characters the model may not write on these pages, as text: the recognizer sets German
    // print's letters that English print lacks (reader_vocab::kNotEnglish) on pages whose languages
    // are English alone. Models trained on German pages beside English wrote long s on generated
    // English held-out pages, where the print was faint (docs/RUNS_GERMAN.md, runs 23–25).
    std::vector<std::string> unwritten;
    // Box-drawing characters written (measurement; reader_vocab::isBoxDrawing). Off: no generated
    // target has held one since run 19 (make_pages.py leaves the fortunes' drawn tables out), and the
    // models trained on the earlier ones wrote runs of "─" over lines that print no text (a page's
    // show-through, on generated held-out pages), which then failed as a decoding loop.
    bool boxDrawing = false;
    // Measurement: every page read with a fresh context (no earlier pages, no recent output), as
    // if each were the volume's first: the ablation of continuous reading (docs/ACCURACY.md).
    bool contextPerPage = false;
    // Engines of one process that decode as one batch share this (reader_sharing.h): the model and
    // front-end are taken from it, and each page's drafts are computed with the other engines';
    // with a device (attention.device), their sessions share one device of it and step together there.
    std::shared_ptr<ReaderSharing> sharing;
};

// Training counts of a reader model's characters, read from `character_counts.tsv` (a header line
// "character<TAB>count", then one character and its count a line). `characters`: the text of each
// vocabulary id, empty for ids that are not characters. Characters counted fewer than `below`
// times (absent ones included) come back as true at their id; other ids false. A malformed file
// is Corrupt with the file and line named.
Result<std::vector<bool>> readRareCharacters(const std::string& file, int below, const std::vector<std::string>& characters);

// One page as read by the decoder.
struct ReaderPage {
    PageText text;
    int tokens = 0;              // generated tokens, the page terminator included
    int computedTokens = 0;      // tokens run through the model: the written ones and refused guesses
    std::string failure;         // non-empty: "token cap" or "decoding loop" with details
    // Diagnostics: seconds the decoder spent on the page (the front-end not counted), wall-clock
    // and on its thread's CPU (less than wall-clock when other threads hold the cores), and pages
    // behind the window the session has computed again so far (DecodeSession::stats()).
    double decodeSeconds = 0, decodeCpuSeconds = 0;
    int64_t pagesComputedAgain = 0;
    // Steps the session has computed so far on a shared device together with other volumes' (a
    // batch of engines on one GPU: ReaderOptions::sharing with a device).
    int64_t deviceBatchedSteps = 0;
};

class ReaderEngine {
public:
    static Result<std::unique_ptr<ReaderEngine>> load(const ReaderOptions& options);
    ~ReaderEngine();

    // Reads the next page of the volume (8-bit gray or BGR). `onText` receives the text as it is
    // generated (UTF-8 pieces). A page that reaches the token cap or loops comes back with
    // `failure` set and no text: it is never silently truncated. Such a page, an error or a
    // cancelled page ends the context: the next page starts a fresh one.
    Result<ReaderPage> readPage(const cv::Mat& image, int dpi, const std::atomic<bool>* cancel = nullptr,
                                const std::function<void(const std::string&)>& onText = {});
    // readPage() in two parts: the front-end's reading of the page (const, thread-safe, so it can
    // run for the next page on another thread), then the decoding, in page order. A failed
    // encoding given to readEncoded() fails that page as readPage() would.
    Result<PpocrPage> encode(const cv::Mat& image, const std::atomic<bool>* cancel = nullptr) const;
    // Look-ahead: a model whose window holds pages after the current one (pagesAhead() > 0) is
    // given the front-end's reading of the pages that follow in `ahead`, in order, up to
    // pagesAhead() of them (fewer at the volume's end; none where they are not known, and the page
    // is read without them). They are fed to the decoder before the page's text is written, as in
    // training, and not fed again when their turn comes (a page whose visual tokens differ from
    // those fed ahead for it starts a fresh context). A failed or oversized page ends the
    // look-ahead there.
    Result<ReaderPage> readEncoded(const Result<PpocrPage>& encoded, int dpi, const std::atomic<bool>* cancel = nullptr,
                                   const std::function<void(const std::string&)>& onText = {},
                                   const std::vector<const Result<PpocrPage>*>& ahead = {});
    int pagesAhead() const;
    int pagesRead() const;
    const PpocrEngine& frontEnd() const;
    // Why the decoder (options.attention.device) or the front-end (options.ppocr.device) is not
    // running on the device it was asked for: no GPU, or a GPU that failed mid-run; empty while
    // they are.
    std::string deviceNotice() const;

    // The decoder's context after the pages read so far (its session state, the repetition rules'
    // recent tokens, and the visual tokens of the pages it added since the last checkpoint), for
    // the project store. Taking a checkpoint starts the next one's list of new pages.
    DecoderCheckpoint checkpoint();
    // Continues from a checkpoint's state: `pages(i)` gives back the visual tokens of the context's
    // page i (those the checkpoints listed). The next readPage() then decodes exactly as the
    // engine that wrote the checkpoint would have. A state from another model is refused.
    Status restore(const std::string& state, const decoder::DecodeSession::PageProvider& pages);

    // The visual tokens of a page read by the front-end: [count, 124], row-major; with `withIds`,
    // [count, 125] with each token's id in the reader's vocabulary. With `evidenceIds` (a
    // character's id in that vocabulary; models with visual_evidence_ids), [count, 130]: three more
    // values after the 124 — the other engine's confidence in its paired glyph, whether one is
    // paired, whether it starts a word before the token — then the id, then the paired glyph's id and
    // the id of the first glyph it read just before the token that the front-end missed (-1: none;
    // tools/train/data.py page_visual_tokens builds the same).
    static std::vector<float> visualTokens(const PpocrPage& page, bool withIds = false,
                                           const std::unordered_map<std::string, int>* evidenceIds = nullptr);
    // Whether the model reads a second recogniser's evidence (visual_evidence_ids): the page given
    // to readEncoded should carry it (PpocrLine::evidence...; a line without it reads as "none").
    bool readsEvidence() const;
    // A page's visual tokens laid out as this engine's model takes them (visualTokens).
    std::vector<float> modelInputs(const PpocrPage& page) const;
    // A front-end class id (1 .. 6624; 6624 is the space) in the reader's vocabulary.
    static int vocabId(int ctcClass);
    // The text of each vocabulary id of the model (empty for ids that are not characters): PP-OCR's
    // characters, and the extra ones where the model has them.
    const std::vector<std::string>& characters() const;

private:
    ReaderEngine();
    Result<ReaderPage> decodePage(const Result<PpocrPage>& encoded, int dpi, const std::atomic<bool>* cancel,
                                  const std::function<void(const std::string&)>& onText,
                                  const std::vector<const Result<PpocrPage>*>& ahead);
    struct Impl;
    std::unique_ptr<Impl> d;
};

}  // namespace quire
