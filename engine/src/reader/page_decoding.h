// PageDecoding: one page of the reader, step by step — the decoding rules applied to each step's
// logits, the token picked, the text written with where it read, and why a page failed.
#pragma once

#include "quire/decoder/model.h"
#include "quire/decoder/session.h"
#include "quire/ppocr/ppocr.h"
#include "quire/reader/reader.h"

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace quire {

// A line the front-end read with features to show: it brings visual tokens (its characters and
// its end); others (no characters or no recognizer output) bring none.
bool bringsVisualTokens(const PpocrLine& line);

class PageDecoding {
public:
    // What the rules take from the engine, for the page's lifetime.
    struct Engine {
        const ReaderOptions& options;
        const decoder::ModelConfig& config;
        const PpocrEngine& ppocr;
        const std::vector<std::string>& characters;       // by vocabulary id: its text (ReaderEngine::characters)
        const std::vector<int>& dashTokens;               // the dash characters' ids (PrintedPunctuation)
        int emDash;                                       // the id of "—", -1: none
        const std::vector<bool>& rare;                    // per id: hardly seen in training
        const std::unordered_map<std::string, int>& idOf;  // a character's id (the evidence's glyphs)
        const std::vector<int>& unwritten;                // ids never picked (ReaderOptions::unwritten)
    };
    enum class Outcome { Go, Done, Failed };

    // `visual`: the page's visual tokens (ReaderEngine::visualTokens, with ids where the model takes
    // them); `pageNo` counts from 0 for messages; `onText` receives the text as it is written.
    PageDecoding(const Engine& engine, const PpocrPage& page, const std::vector<float>& visual, int pageNo,
                 decoder::GreedySampler& sampler, const decoder::DecodeSession& session,
                 std::function<void(const std::string&)> onText);

    // One step's logits (`guess`: the visual token the step's input guessed, -1: none): the rules,
    // the pick, and whether the page goes on, is done or failed (failure() says why).
    Outcome step(const decoder::StepResult& step, int guess);
    // The visual token the next written token reads (the next draft's first guess).
    int nextGuess() const;
    // The last token picked: the next step's input.
    int chosen() const { return m_chosen; }
    // Whether the pick never depends on the guess (no prior, no evidence): then a draft goes on
    // whatever the guess, as plain steps would.
    bool picksIgnoreGuess() const { return m_e.options.draftPrior <= 0 && m_evidenceIds.empty(); }
    const std::vector<int>& visualIds() const { return m_visualIds; }
    int tokens() const { return m_steps; }  // tokens generated, the terminator included
    const std::string& failure() const { return m_failure; }
    // The page's text, words placed where they stand (the page-end hyphen kept where it applies).
    void finish(PageText& text);

private:
    void write(int token, float prob, int visual);
    // A written token's text in the stream: a paragraph break, a space for a space or a line end,
    // its character; empty for any other id.
    const std::string& textOf(int token) const;
    // A decoding loop's reason, from the repeats' last `span` tokens.
    std::string loopFailure(int span) const;

    const Engine m_e;
    const PpocrPage& m_page;
    const std::vector<float>& m_visual;
    const int m_pageNo, m_count, m_cap;
    decoder::GreedySampler& m_sampler;
    const decoder::DecodeSession& m_session;
    std::function<void(const std::string&)> m_onText;
    const bool m_lineEnds;  // the model writes one line end per visual line end

    // Per visual token: the front-end's id, Tesseract's differing glyph and its confidence, and
    // what the front-end read (a Latin word character, a hyphen, the end of a word).
    std::vector<int> m_visualIds, m_evidenceIds;
    std::vector<float> m_evidenceConf;
    std::vector<bool> m_wordChar, m_hyphen, m_digit, m_endsWord;
    std::vector<bool> m_laidApart;  // per line: a wide white band follows (layoutParagraphs)
    std::vector<bool> m_typesetEnd;  // per line: the typesetting ends a paragraph after it (typesetParagraphs)
    std::vector<bool> m_noParagraph;  // per line: the typesetting ends no paragraph after it, whatever the model wrote (typesetParagraphs)
    bool m_spacedScript = false;    // a Latin script: under a tenth of the letters CJK

    LineEndRule m_lineEndRule;
    LineEndHyphen m_lineEndHyphen;
    PrintedPunctuation m_printed;
    RereadDetector m_reread;
    // A line the model skipped whole (a running head, a folio) ends with LINE_JOIN, as trained:
    // it adds nothing to the text, and the join rule leaves it alone.
    bool m_lineHasText = false;
    // Text written since the last line end that was a space or a paragraph: a running head written,
    // then joined with nothing to the skipped folio beside it, still ends its paragraph at the band.
    bool m_textSinceBreak = false;

    std::vector<int> m_tokens, m_attended;  // written: the tokens, the visual token each read (-1: none)
    std::vector<std::pair<size_t, int>> m_writtenEnds;  // written LINE_BREAKs and PARAGRAPHs: the token's index, the line it ends
    std::vector<float> m_probs;
    std::vector<float> m_biased;
    int m_steps = 0, m_chosen = -1, m_chosenFrom = -1;
    std::string m_failure;
};

}  // namespace quire
