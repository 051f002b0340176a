// The reader over the PP-OCR front-end: its visual tokens, the shipped model end to end (words
// placed, running heads apart, page-end hyphens, rare characters), drafts, devices, streaming and
// failed pages. Its decoding rules on hand-made inputs: tst_reader_rules; the front-end itself:
// tst_ppocr; the context across pages (resume, look-ahead, batches on a device): tst_reader_context.
#include <QTemporaryDir>
#include <QtTest>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "quire/core/backend.h"
#include "quire/decoder/model.h"
#include "quire/ppocr/ppocr.h"
#include "quire/store/project_store.h"
#include "quire/reader/reader.h"
#include "quire/pipeline/transcriber.h"
#include "quire/recognizers/recognizer.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;
namespace fs = std::filesystem;

// A reader-shaped model small enough to generate in a test (random weights).
static decoder::ModelConfig tinyReaderConfig() {
    return tinyDecoderConfig(reader_vocab::kVocabSize, reader_vocab::kVisualDim, 1 << 16);
}

// A generated reader model that prefers token `plus` or token `minus` at every step: its last norm
// magnifies one dimension, which only those two tokens' output rows read, with opposite signs.
// With `lineAligned`, it takes the front-end's ids and line-aligned positions, as the shipped reader.
static decoder::ModelWeights preferringOneOf(size_t plus, size_t minus, bool lineAligned = false) {
    decoder::ModelConfig c = tinyReaderConfig();
    if (lineAligned) {
        c.visualTokenIds = c.pageAlignedPositions = true;
        c.lineEndTokenIds = {reader_vocab::kParagraph, reader_vocab::kLineBreak, reader_vocab::kLineJoin};
        c.visualLineEndTokenId = reader_vocab::kLineBreak;
    }
    decoder::ModelWeights m = decoder::randomModel(c, 5);
    const size_t H = size_t(m.config.hiddenSize);
    std::vector<float>& head = m.lmHead.empty() ? m.embed : m.lmHead;
    for (size_t v = 0; v < size_t(m.config.vocabSize); ++v) head[v * H] = 0.f;
    head[plus * H] = 1.f, head[minus * H] = -1.f;
    m.finalNorm[0] = 1000.f;
    return m;
}

// The shipped reader's text of `page` with one of its rules on or off (`set`), or nothing where
// the model is missing or the page fails; the text goes to the test log.
static std::optional<PageText> readWithRule(const std::string& dir, const cv::Mat& page, bool rule,
                                            const std::function<void(ReaderOptions&, bool)>& set) {
    ReaderOptions o;
    o.modelDir = dir;
    set(o, rule);
    auto reader = ReaderEngine::load(o);
    if (!reader) return std::nullopt;
    auto got = (*reader)->readPage(page, 300);
    if (!got || !got->failure.empty()) return std::nullopt;
    qInfo("rule %s: %s", rule ? "on" : "off", QString::fromStdString(got->text.plainText()).replace('\n', " / ").toUtf8().constData());
    return got->text;
}

class TestReader : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY2(findPpocrModels(), findPpocrModels().status().message().c_str());
    }

    // The reader's visual tokens: one per CTC character and one per line end, 124 values, flags
    // where lines start and end; with ids, the 125th value is the token in the reader's vocabulary.
    void readerVisualTokensFollowTheCtcCharacters() {
        auto engine = PpocrEngine::load(PpocrOptions{});
        QVERIFY(engine);
        QCOMPARE((*engine)->classCount(), reader_vocab::kKeyCount + 2);
        auto read = (*engine)->read(textPage({"Two lines", "of text"}, 1200, 500, 1.4), true);
        QVERIFY(read);
        QCOMPARE(int(read->lines.size()), 2);
        const auto v = ReaderEngine::visualTokens(*read);
        size_t chars = 0;
        for (const auto& l : read->lines) chars += l.charIds.size();
        const size_t tokens = chars + read->lines.size();
        QCOMPARE(v.size(), tokens * size_t(reader_vocab::kVisualDim));
        const auto& first = read->lines[0];
        QCOMPARE(v[120], first.charProbs[0]);
        QCOMPARE(v[121], 1.f);  // line start
        QVERIFY(std::equal(v.begin(), v.begin() + 120, first.features.begin() + size_t(first.charFrames[0]) * 120));
        const size_t end = first.charIds.size();  // the first line's end token
        QVERIFY(std::all_of(v.begin() + long(end * 124), v.begin() + long(end * 124 + 120), [](float x) { return x == 0.f; }));
        QCOMPARE(v[end * 124 + 122], 1.f);
        QCOMPARE(v[end * 124 + 121], 0.f);
        QCOMPARE(v[end * 124 + 123], v[123]);  // the line's vertical place

        // With ids (visual_token_ids models): the restored space between "Two" and "lines" is the
        // space token, the line's end the line-break token.
        const auto w = ReaderEngine::visualTokens(*read, true);
        QCOMPARE(w.size(), tokens * size_t(reader_vocab::kVisualDim + 1));
        QVERIFY(std::equal(v.begin(), v.begin() + 124, w.begin()));
        std::string spelled;
        for (size_t k = 0; k < first.charIds.size(); ++k) {
            const int id = int(w[k * 125 + 124]);
            QCOMPARE(id, ReaderEngine::vocabId(first.charIds[k]));
            spelled += id == reader_vocab::kSpace ? " " : (*engine)->charOf(id - reader_vocab::kFirstChar + 1);
        }
        QCOMPARE(QString::fromStdString(spelled), QString::fromStdString(first.text));
        QVERIFY2(first.text.find(' ') != std::string::npos, first.text.c_str());
        QCOMPARE(int(w[end * 125 + 124]), reader_vocab::kLineBreak);
        QCOMPARE(ReaderEngine::vocabId(reader_vocab::kKeyCount + 1), reader_vocab::kSpace);
        QCOMPARE(ReaderEngine::vocabId(reader_vocab::kKeyCount + 2), reader_vocab::kUnknown);
    }

    // With Tesseract's evidence (visual_evidence_ids models; tools/train/data.py lays out the same):
    // 127 values (the 124, the paired glyph's confidence, whether one is paired, whether a word
    // starts before the token), the token's id, the paired glyph's id and the first glyph read just
    // before it that the front-end missed; -1 where there is none, a glyph outside the vocabulary
    // or a line without evidence.
    void readerVisualTokensCarryTheEvidence() {
        auto engine = PpocrEngine::load(PpocrOptions{});
        QVERIFY(engine);
        auto read = (*engine)->read(textPage({"Two lines", "of text"}, 1200, 500, 1.4), true);
        QVERIFY(read);
        QCOMPARE(int(read->lines.size()), 2);
        std::unordered_map<std::string, int> idOf;
        for (int cls = 1; cls <= reader_vocab::kKeyCount; ++cls) idOf.emplace((*engine)->charOf(cls), reader_vocab::kFirstChar + cls - 1);
        PpocrLine& first = read->lines[0];
        const size_t n = first.charIds.size();
        QVERIFY(n >= 4);
        first.evidence.assign(n, "T");
        first.evidence[1].clear();    // nothing paired
        first.evidence[2] = "\xef\xac\x81";  // "ﬁ": not in the vocabulary
        first.evidenceConf.assign(n, 0.75f);
        first.evidenceBreak.assign(n, 0);
        first.evidenceBreak[3] = 1;
        first.evidenceBefore.assign(n, "");
        first.evidenceBefore[3] = "\xc3\xa9" "a";  // "éa": its first character
        first.evidenceTrailing = "s";
        const auto w = ReaderEngine::visualTokens(*read, true, &idOf);
        const auto plain = ReaderEngine::visualTokens(*read, true);
        const size_t tokens = plain.size() / 125, stride = 130;
        QCOMPARE(w.size(), tokens * stride);
        for (size_t t = 0; t < tokens; ++t) {
            QVERIFY(std::equal(w.begin() + long(t * stride), w.begin() + long(t * stride + 124), plain.begin() + long(t * 125)));
            QCOMPARE(w[t * stride + 127], plain[t * 125 + 124]);  // the token's own id
        }
        auto row = [&](size_t t) { return std::vector<float>(w.begin() + long(t * stride + 124), w.begin() + long((t + 1) * stride)); };
        const float T = float(idOf.at("T")), e = float(idOf.at("\xc3\xa9")), s = float(idOf.at("s"));
        const float own0 = float(ReaderEngine::vocabId(first.charIds[0]));
        QCOMPARE(row(0), (std::vector<float>{0.75f, 1.f, 0.f, own0, T, -1.f}));
        QCOMPARE(row(1)[1], 0.f);   // unpaired: no confidence, no id
        QCOMPARE(row(1)[0], 0.f);
        QCOMPARE(row(1)[4], -1.f);
        QCOMPARE(row(2)[1], 1.f);   // paired with a glyph the vocabulary lacks
        QCOMPARE(row(2)[4], -1.f);
        QCOMPARE(row(3)[2], 1.f);   // a word starts before it
        QCOMPARE(row(3)[5], e);
        QCOMPARE(row(n), (std::vector<float>{0.f, 0.f, 0.f, float(reader_vocab::kLineBreak), -1.f, s}));  // the line's end
        for (size_t t = n + 1; t < tokens; ++t) {  // the second line has no evidence
            QCOMPARE(row(t)[1], 0.f);
            QCOMPARE(row(t)[4], -1.f);
            QCOMPARE(row(t)[5], -1.f);
        }
    }

    // Where the reader model is looked for: an explicit folder only (the engine reads no
    // environment: quire-cli maps $QUIRE_READER_MODEL onto the folder, tst_cli checks that).
    void readerModelIsFoundOrTheSearchIsNamed() {
        QTemporaryDir tmp;
        const auto missing = findReaderModel(tmp.filePath("nowhere").toStdString());
        QVERIFY(!missing);
        QVERIFY2(QString::fromStdString(missing.status().message()).contains("nowhere"), missing.status().message().c_str());
        QVERIFY(decoder::saveModel(decoder::randomModel(tinyReaderConfig(), 1), tmp.filePath("m").toStdString()));
        QCOMPARE(QString::fromStdString(*findReaderModel(tmp.filePath("m").toStdString())), tmp.filePath("m"));
        qputenv("QUIRE_READER_MODEL", tmp.filePath("nowhere").toUtf8());
        const auto notFromEnv = findReaderModel(tmp.filePath("m").toStdString());
        qunsetenv("QUIRE_READER_MODEL");
        QCOMPARE(QString::fromStdString(*notFromEnv), tmp.filePath("m"));
    }

    // The front-end reads with the line batch the model was trained on (its config's
    // front_end_line_batch; 8 where the file has none), unless a measurement sets one: the
    // padding to a batch's widest line changes the visual tokens, so a model must get its own.
    void frontEndReadsWithTheModelsLineBatch() {
        QTemporaryDir tmp;
        decoder::ModelConfig c = tinyReaderConfig();
        const std::string old = tmp.filePath("old").toStdString(), one = tmp.filePath("one").toStdString();
        QVERIFY(decoder::saveModel(decoder::randomModel(c, 1), old));
        c.frontEndLineBatch = 1;
        QVERIFY(decoder::saveModel(decoder::randomModel(c, 1), one));
        ReaderOptions o;
        o.modelDir = old;
        QCOMPARE((*ReaderEngine::load(o))->frontEnd().options().recBatch, 8);
        o.modelDir = one;
        auto reader = ReaderEngine::load(o);
        QVERIFY(reader);
        QCOMPARE((*reader)->frontEnd().options().recBatch, 1);
        o.frontEndLineBatch = 3;
        QCOMPARE((*ReaderEngine::load(o))->frontEnd().options().recBatch, 3);
        // Lines of different widths: with one line a call each is padded alone, and the reader's
        // tokens are those of a front-end set to 1, not to 8.
        const cv::Mat page = textPage({"A short line", "and a much longer line of text below it", "end"}, 1600, 600, 1.4);
        auto mine = (*reader)->encode(page);
        PpocrOptions eight;
        eight.recBatch = 8;
        auto batched = (*PpocrEngine::load(eight))->read(page, true);
        auto single = (*PpocrEngine::load(PpocrOptions{}))->read(page, true);
        QVERIFY(mine && batched && single);
        QCOMPARE(PpocrOptions{}.recBatch, 1);
        QVERIFY(ReaderEngine::visualTokens(*mine) == ReaderEngine::visualTokens(*single));
        QVERIFY(ReaderEngine::visualTokens(*mine) != ReaderEngine::visualTokens(*batched));
    }

    // Two vocabularies load: the shipped model's (PP-OCR's characters) and one with German print's
    // extra letters after LINE_JOIN, which the engine then writes and its notice no longer names;
    // a model of any other size is refused with its size named.
    void readerVocabularyWithOrWithoutTheExtraLetters() {
        using namespace reader_vocab;
        QTemporaryDir tmp;
        for (const int size : {kBaseVocabSize, kVocabSize}) {
            const std::string dir = tmp.filePath(QString("m%1").arg(size)).toStdString();
            QVERIFY(decoder::saveModel(decoder::randomModel(tinyDecoderConfig(size, kVisualDim, 1 << 16), 1), dir));
            ReaderOptions o;
            o.modelDir = dir;
            auto reader = ReaderEngine::load(o);
            QVERIFY2(reader, reader.status().message().c_str());
            const auto& chars = (*reader)->characters();
            QCOMPARE(int(chars.size()), size);
            QCOMPARE(chars[size_t(kFirstChar)], (*reader)->frontEnd().charOf(1));
            QVERIFY(chars[size_t(kSkip)].empty() && chars[size_t(kLineJoin)].empty() && chars[size_t(kSpace)].empty());
            RecognizerOptions r;
            r.engine = "reader", r.languages = "deu+frk", r.readerModel = dir;
            auto recognizer = createRecognizer(r);
            QVERIFY2(recognizer.isOk(), recognizer.status().message().c_str());
            const std::string notice = (*recognizer)->charsetNotice();
            if (size == kVocabSize) {
                QCOMPARE(chars[size_t(kFirstExtra + 3)], std::string("\u00df"));
                QCOMPARE(chars[size_t(kFirstExtra + 4)], std::string("\u017f"));
                QVERIFY2(notice.empty(), notice.c_str());
            } else {
                QVERIFY2(notice.rfind("the reader cannot write \u00f6, \u00df, \u00c4, \u00d6, \u017f (deu, frk)", 0) == 0, notice.c_str());
            }
        }
        QVERIFY(decoder::saveModel(decoder::randomModel(tinyDecoderConfig(kVocabSize + 1, kVisualDim, 1 << 16), 1),
                                   tmp.filePath("odd").toStdString()));
        ReaderOptions o;
        o.modelDir = tmp.filePath("odd").toStdString();
        auto odd = ReaderEngine::load(o);
        QVERIFY(!odd);
        QVERIFY2(odd.status().message().find("vocab_size " + std::to_string(kVocabSize + 1)) != std::string::npos,
                 odd.status().message().c_str());
    }

    // The shipped reader places each word where the front-end saw it: word boxes come from the
    // visual tokens the words attended to most.
    void shippedReaderPlacesWordsWhereTheyStand() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        ReaderOptions o;
        o.modelDir = *dir;
        auto reader = ReaderEngine::load(o);
        QVERIFY2(reader, reader.status().message().c_str());
        const std::vector<std::string> lines = {"The words of the reader", "stand where the page has them,",
                                                "line under line."};
        const cv::Mat page = textPage(lines, 1700, 700, 1.4);
        auto got = (*reader)->readPage(page, 300);
        QVERIFY2(got, got.status().message().c_str());
        QVERIFY2(got->failure.empty(), got->failure.c_str());
        auto ppocr = PpocrEngine::load(PpocrOptions{});
        QVERIFY2(ppocr, ppocr.status().message().c_str());
        auto front = (*ppocr)->read(page, true, nullptr);
        QVERIFY(front);
        int words = 0, placed = 0;
        for (const auto& line : got->text.lines)
            for (const auto& w : line.words) {
                ++words;
                const cv::Point centre(w.box.x + w.box.w / 2, w.box.y + w.box.h / 2);
                // Inside the front-end's line that holds the word, and not just the line's corner.
                for (const auto& fl : front->lines) {
                    const Box& b = fl.box;
                    const bool inside = centre.x >= b.x && centre.x < b.x + b.w && centre.y >= b.y && centre.y < b.y + b.h;
                    if (inside && fl.text.find(w.text) != std::string::npos && w.box.w < b.w) {
                        ++placed;
                        break;
                    }
                }
            }
        qInfo("%d of %d words inside the front-end line that holds them", placed, words);
        QVERIFY(words >= 12);
        QVERIFY(placed >= words * 9 / 10);
    }

    // A running head set apart from the text by white is a paragraph of its own in the reader's
    // text (so that the book's assembly can tell it from the body), whatever the model wrote at its
    // end (the rule's choice: aLineLaidApartEndsItsParagraph; the band: tst_ppocr). Without the rule
    // some models run it into the body's first sentence on this page, others keep it apart
    // themselves, so only the reading with the rule is checked.
    void readerKeepsARunningHeadApart() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        const cv::Mat page = textPage({"THE BINDER'S GUIDE", "", "covered in calf or vellum, and the",
                                       "edges gilt or sprinkled with red; the", "boards were of oak or of pasteboard,",
                                       "and the spine was lettered in gold."},
                                      1500, 760, 1.3);
        // The paragraphs of the head's and the body's first words, whether a line holds both, and
        // the page's paragraphs.
        struct Reading {
            int head = -1, body = -1, paragraphs = 0;
            bool mixed = false;
        };
        auto read = [&] {
            Reading r;
            const auto text = readWithRule(*dir, page, true, [](ReaderOptions& o, bool on) { o.layoutParagraphs = on; });
            if (!text) return r;
            std::set<int> paragraphs;
            for (const auto& line : text->lines) {
                bool h = false, b = false;
                for (const auto& w : line.words) {
                    h = h || w.text.find("GUIDE") != std::string::npos;
                    b = b || w.text.find("covered") != std::string::npos;
                }
                if (h) r.head = line.paragraph;
                if (b) r.body = line.paragraph;
                r.mixed = r.mixed || (h && b);
                paragraphs.insert(line.paragraph);
            }
            r.paragraphs = int(paragraphs.size());
            return r;
        };
        const Reading on = read();
        QVERIFY(on.head >= 0 && on.body >= 0);
        QVERIFY(!on.mixed);
        QVERIFY(on.head < on.body);
        QCOMPARE(on.paragraphs, 2);  // the head, and the body's lines as one paragraph
    }

    // A paragraph that starts with a first-line indent is a paragraph in the reader's text: the
    // model sees no line's left edge, the typesetting rule does (typesetParagraphEnd, tst_ppocr).
    // The rule works after decoding, so it changes paragraph ends and no word.
    void readerEndsAParagraphWhereTheNextLineIsIndented() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        const cv::Mat page = textPage({"covered in calf or vellum, and the edges", "gilt or sprinkled with red; the boards",
                                       "were of oak or of pasteboard, and the", "spine was lettered in gold, with bands",
                                       "    and panels; the sewing was done on", "raised cords, five or six to a book."},
                                      1500, 760, 1.3);
        // The paragraphs of the first line and of the indented one.
        struct Reading {
            int first = -1, second = -1;  // the paragraphs of the first line and of the indented one
            QStringList words;
        };
        auto readWith = [&](bool rule) {
            Reading r;
            const auto text = readWithRule(*dir, page, rule, [](ReaderOptions& o, bool on) { o.typesetParagraphs = on; });
            if (!text) return r;
            for (const auto& line : text->lines)
                for (const auto& w : line.words) {
                    if (w.text == "covered") r.first = line.paragraph;
                    if (w.text == "panels;") r.second = line.paragraph;
                    r.words << QString::fromStdString(w.text);
                }
            return r;
        };
        const Reading on = readWith(true);
        QVERIFY(on.first >= 0 && on.second >= 0);
        QVERIFY2(on.second == on.first + 1, "the indented line starts the next paragraph");
        const Reading off = readWith(false);
        QCOMPARE(off.words, on.words);
    }

    // A justified line set with wide word spaces, which the detector cuts into pieces, each short:
    // the pieces are one line of one paragraph with the lines around it, as printed (the typeset
    // rule took each piece for a paragraph's short last line, and the model ended a paragraph after
    // the row), and the words are the same.
    void aLineCutAtWideSpacesStaysOneLine() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        const double scale = 1.3;
        cv::Mat page = textPage({"covered in calf or vellum, and the edges", "gilt or sprinkled with red; the boards", "",
                                 "spine was lettered in gold, with bands", "and panels; the sewing was done on"},
                                1500, 760, scale);
        // Justified to the first line's width: word spaces of about twice the type's height.
        const int y = int(120 * scale) + 2 * int(60 * scale), left = int(100 * scale);
        const int right = left + cv::getTextSize("covered in calf or vellum, and the edges", cv::FONT_HERSHEY_DUPLEX, scale, 2, nullptr).width;
        const std::vector<std::string> spaced = {"were", "of", "oaken", "or", "beech", "boards,"};
        int inked = 0;
        for (const auto& w : spaced) inked += cv::getTextSize(w, cv::FONT_HERSHEY_DUPLEX, scale, 2, nullptr).width;
        const double space = double(right - left - inked) / double(spaced.size() - 1);
        double x = left;
        for (const auto& w : spaced) {
            cv::putText(page, w, {int(x), y}, cv::FONT_HERSHEY_DUPLEX, scale, cv::Scalar(0), 2, cv::LINE_AA);
            x += cv::getTextSize(w, cv::FONT_HERSHEY_DUPLEX, scale, 2, nullptr).width + space;
        }
        auto front = (*PpocrEngine::load(PpocrOptions{}))->read(page, true);
        QVERIFY(front);
        int pieces = 0;
        for (const auto& l : front->lines) pieces += std::abs(l.box.y + l.box.h / 2 - y) < 20 ? 1 : 0;
        QVERIFY2(pieces >= 2, "the detector did not cut the spaced line: the test shows nothing");
        auto readWith = [&](bool rule) {
            std::map<std::string, std::pair<int, int>> at;  // word: (line, paragraph)
            QStringList words;
            const auto text = readWithRule(*dir, page, rule, [](ReaderOptions& o, bool on) { o.typesetParagraphs = on; });
            if (text)
                for (size_t l = 0; l < text->lines.size(); ++l)
                    for (const auto& w : text->lines[l].words) {
                        at[w.text] = {int(l), text->lines[l].paragraph};
                        words << QString::fromStdString(w.text);
                    }
            return std::make_pair(at, words);
        };
        const auto [on, onWords] = readWith(true);
        for (const char* w : {"were", "oaken", "boards,", "gilt", "spine"}) QVERIFY2(on.count(w), w);
        QCOMPARE(on.at("oaken").first, on.at("were").first);
        QCOMPARE(on.at("boards,").first, on.at("were").first);
        QCOMPARE(on.at("were").second, on.at("gilt").second);
        QCOMPARE(on.at("spine").second, on.at("were").second);  // a stretched row ends no paragraph
        QCOMPARE(readWith(false).second, onWords);
    }

    // A word broken over the page break keeps its hyphen at the end of the page's text, above the
    // folio (skipped, or kept as a paragraph of its own), so that the book joins it
    // (tests/make_page_end_hyphen_page.py). The
    // rule adds that hyphen where the model dropped it and changes nothing else (its choices:
    // aPageEndHyphenIsWrittenBackOnlyAfterItsWord); a model that writes it itself needs no rule.
    void aWordBrokenOverThePageKeepsItsHyphen() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        const cv::Mat page =
            cv::imread((sourceDir() + "/tests/fixtures/page_end_hyphen.png").toStdString(), cv::IMREAD_GRAYSCALE);
        QVERIFY(!page.empty());
        auto readWith = [&](bool rule) {
            const auto text = readWithRule(*dir, page, rule, [](ReaderOptions& o, bool on) { o.pageEndHyphen = on; });
            return text ? text->plainText() : std::string("(failed)");
        };
        const std::string on = readWith(true), off = readWith(false);
        auto trimmed = [](std::string s) {
            while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
            return s;
        };
        const QString withRule = QString::fromStdString(trimmed(on)), without = QString::fromStdString(trimmed(off));
        // The text ends with "bind-", or with it and then the page's folio as a paragraph of its own.
        static const QRegularExpression end("bind-(\\s*\\n\\s*\\d{1,4})?$");
        QVERIFY2(end.match(withRule).hasMatch(), on.c_str());
        QVERIFY2(withRule == without || QString(withRule).replace("bind-", "bind") == without, off.c_str());
    }

    // Verifying the front-end's characters as a draft many tokens per pass writes what decoding
    // one token at a time writes: the same words, boxes and token counts, confidences to rounding,
    // over pages that carry the context from one to the next.
    void readerDraftWritesWhatOneTokenAtATimeWrites() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        ReaderOptions o;
        o.modelDir = *dir;
        o.draft = false;
        auto plain = ReaderEngine::load(o);
        o.draft = true;
        auto drafted = ReaderEngine::load(o);
        QVERIFY2(plain && drafted, plain ? drafted.status().message().c_str() : plain.status().message().c_str());
        const std::vector<std::vector<std::string>> texts = {
            {"CHAPTER THE FIRST.", "Of the binding of books, and of", "the paper that was used for them."},
            {"12 THE BINDER'S GUIDE", "The sheets were folded, gathered", "and sewn on cords; the boards were"},
            {"THE BINDER'S GUIDE 13", "covered in calf or vellum, and the", "edges gilt or sprinkled with red."},
            // Figures and a blurred, shrunken scan: where the model departs from the front-end,
            // so that draft passes end early and the draft prior meets other guesses.
            {"(see p. 231) in 1868, No. 17; the", "F.3d 1288, 1301-02 (11th Cir.", "1996), at $4.50 or 12%."}};
        int words = 0;
        for (size_t k = 0; k < texts.size(); ++k) {
            cv::Mat page = textPage(texts[k], 1500, 560, 1.3);
            if (k == 3) {
                cv::GaussianBlur(page, page, cv::Size(5, 5), 1.6);
                cv::resize(page, page, cv::Size(), 0.45, 0.45, cv::INTER_AREA);
            }
            auto a = (*plain)->readPage(page, 300);
            auto b = (*drafted)->readPage(page, 300);
            QVERIFY2(a && b, a ? b.status().message().c_str() : a.status().message().c_str());
            QCOMPARE(QString::fromStdString(b->failure), QString::fromStdString(a->failure));
            QCOMPARE(b->tokens, a->tokens);
            QCOMPARE(QString::fromStdString(b->text.plainText()), QString::fromStdString(a->text.plainText()));
            QCOMPARE(b->text.lines.size(), a->text.lines.size());
            for (size_t l = 0; l < a->text.lines.size(); ++l) {
                const auto &wa = a->text.lines[l].words, &wb = b->text.lines[l].words;
                QCOMPARE(wb.size(), wa.size());
                for (size_t w = 0; w < wa.size(); ++w, ++words) {
                    QVERIFY(sameBox(wb[w].box, wa[w].box));
                    QVERIFY(std::abs(wb[w].confidence - wa[w].confidence) < 0.01f);
                }
            }
        }
        QVERIFY(words >= 30);
    }

    // The reader with its decoder and its front-end on devices (the mirrors: the device paths on
    // the host, so this runs without a GPU): pages prefilled there, plain steps, the attended
    // visual tokens (word boxes) tracked there, the front-end's heavy nodes there. The same text, tokens and word boxes as the CPU's reader, across pages
    // that carry the context; no device notice.
    void readerOnADeviceWritesWhatTheCpuWrites() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        ReaderOptions o;
        o.modelDir = *dir;
        auto cpu = ReaderEngine::load(o);
        o.attention.device = decoder::StepDevice::Mirror;
        o.ppocr.device = "mirror";
        auto dev = ReaderEngine::load(o);
        QVERIFY2(cpu && dev, cpu ? dev.status().message().c_str() : cpu.status().message().c_str());
        const std::vector<std::vector<std::string>> texts = {
            {"CHAPTER THE FIRST.", "Of the binding of books, and of"},
            {"12 THE BINDER'S GUIDE", "The sheets were folded, gathered"}};
        int words = 0, sameBoxes = 0;
        for (const auto& lines : texts) {
            const cv::Mat page = textPage(lines, 1100, 300, 1.3);
            auto a = (*cpu)->readPage(page, 300);
            auto b = (*dev)->readPage(page, 300);
            QVERIFY2(a && b, a ? b.status().message().c_str() : a.status().message().c_str());
            QCOMPARE(QString::fromStdString(b->failure), QString::fromStdString(a->failure));
            QCOMPARE(QString::fromStdString(b->text.plainText()), QString::fromStdString(a->text.plainText()));
            QCOMPARE(b->tokens, a->tokens);
            QCOMPARE(b->text.lines.size(), a->text.lines.size());
            for (size_t l = 0; l < a->text.lines.size(); ++l) {
                const auto &wa = a->text.lines[l].words, &wb = b->text.lines[l].words;
                QCOMPARE(wb.size(), wa.size());
                for (size_t w = 0; w < wa.size(); ++w, ++words)
                    sameBoxes += sameBox(wb[w].box, wa[w].box);
            }
        }
        QVERIFY2((*dev)->deviceNotice().empty(), (*dev)->deviceNotice().c_str());
        QVERIFY(words >= 10);
        // Boxes come from the most-attended visual token, which a near tie could move: all but a few.
        QVERIFY2(sameBoxes >= words - 1, qPrintable(QString("%1 of %2 word boxes the same").arg(sameBoxes).arg(words)));
        qInfo("%d words, %d boxes the same", words, sameBoxes);
    }

    // Asked for a GPU where there is none, a transcription with the reader goes on with the CPU
    // (decoder and front-end) and its log says why; Tesseract refuses --device cuda.
    void readerWithoutAGpuFallsBackWithANote() {
        if (!findReaderModel()) QSKIP("no reader model is shipped");
        if (!gpuDevices().empty()) QSKIP("a GPU is present");
        QTemporaryDir tmp;
        const QString img = tmp.filePath("page.png");
        cv::imwrite(img.toStdString(), textPage({"Of the binding of books, and of"}, 1100, 200, 1.3));
        const auto r = runCli({"transcribe", img, "--project", tmp.filePath("p.quire"), "--engine", "reader", "--device",
                               "cuda", "--export", "txt", "--out", tmp.filePath("out")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("decoding on the CPU") && r.err.contains("PP-OCR on the CPU") && r.err.contains("CUDA"),
                 qPrintable(r.err));
        const auto t = runCli({"transcribe", img, "--project", tmp.filePath("t.quire"), "--engine", "tesseract", "--device", "cuda"});
        QCOMPARE(t.exitCode, 2);
        QVERIFY2(t.err.contains("Tesseract runs on the CPU only"), qPrintable(t.err));
    }

    // The reader streams its text token by token to TranscribeParams::onText, per page, while it
    // writes (an untrained model: the pages then fail, but what it generated was seen as it came).
    void readerStreamsTokensAsTheyAreGenerated() {
        QTemporaryDir tmp;
        QVERIFY(decoder::saveModel(decoder::randomModel(tinyReaderConfig(), 5), tmp.filePath("model").toStdString()));
        auto store = ProjectStore::open(tmp.filePath("s.quire").toStdString(), ProjectStore::Mode::OpenOrCreate);
        QVERIFY(store);
        TranscribeParams p;
        for (int k = 0; k < 2; ++k) {  // two short pages keep the test quick (also under ASan)
            const QString png = tmp.filePath(QString("page%1.png").arg(k));
            QVERIFY(cv::imwrite(png.toStdString(), textPage({"Streaming page " + std::to_string(k + 1), "of the reader"}, 1200, 500, 1.4)));
            p.inputs.push_back(png.toStdString());
        }
        p.recognizer.engine = "reader";
        p.recognizer.readerModel = tmp.filePath("model").toStdString();
        std::mutex m;
        std::map<int64_t, int> pieces;
        p.onText = [&](int64_t page, const std::string& piece) {
            QVERIFY(!piece.empty());
            std::lock_guard lock(m);
            ++pieces[page];
        };
        std::set<int64_t> finished;
        p.onPage = [&](const PageEvent& e) { finished.insert(e.page.id); };
        auto r = runTranscription(**store, p);
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(int(finished.size()), 2);
        QCOMPARE(int(pieces.size()), 2);  // every page streamed before it ended
        for (const auto& [page, n] : pieces) {
            QVERIFY(finished.count(page));
            QVERIFY(n > 1);
        }
    }

    // On pages whose languages are English alone the reader writes none of German print's letters
    // that English print lacks (ſ ß „ ‚), however strongly its model prefers them; on German pages
    // it may. The generated model here prefers ſ or ß at every step (preferringOneOf).
    void englishPagesGetNoGermanPrintLetters() {
        using namespace reader_vocab;
        QTemporaryDir tmp;
        const size_t longS = size_t(kFirstExtra + 4), sharpS = size_t(kFirstExtra + 3);
        QVERIFY(decoder::saveModel(preferringOneOf(longS, sharpS), tmp.filePath("model").toStdString()));
        const QString png = tmp.filePath("page.png");
        QVERIFY(cv::imwrite(png.toStdString(), textPage({"The sheets were folded", "and sewn on cords"}, 1200, 500, 1.4)));
        auto written = [&](const std::string& languages) {
            auto store = ProjectStore::open(tmp.filePath(QString::fromStdString(languages) + ".quire").toStdString(),
                                            ProjectStore::Mode::OpenOrCreate);
            std::string text;
            if (!store) return text;
            TranscribeParams p;
            p.inputs = {png.toStdString()};
            p.recognizer.engine = "reader";
            p.recognizer.languages = languages;
            p.recognizer.readerModel = tmp.filePath("model").toStdString();
            std::mutex lock;
            p.onText = [&](int64_t, const std::string& piece) {
                std::lock_guard g(lock);
                text += piece;
            };
            (void)runTranscription(**store, p);  // the page may fail (generated weights): its text streamed first
            return text;
        };
        auto german = [](const std::string& t) {
            for (const char* c : kNotEnglish)
                if (t.find(c) != std::string::npos) return true;
            return false;
        };
        const std::string deu = written("deu"), eng = written("eng");
        QVERIFY2(german(deu), deu.c_str());
        QVERIFY2(!eng.empty() && !german(eng), eng.c_str());
    }

    // The reader writes no box-drawing character (─ │ ├ ┌), however strongly its model prefers one,
    // unless asked to (a measurement): the generated model here prefers "─" or "│" at every step
    // (preferringOneOf).
    void boxDrawingIsNotWritten() {
        using namespace reader_vocab;
        auto ppocr = PpocrEngine::load(PpocrOptions{});
        QVERIFY2(ppocr, ppocr.status().message().c_str());
        size_t rule = 0, bar = 0;  // the vocabulary ids of "─" and "│"
        for (int cls = 1; cls <= kKeyCount; ++cls) {
            const std::string ch = (*ppocr)->charOf(cls);
            if (ch == "\u2500") rule = size_t(kFirstChar + cls - 1);
            if (ch == "\u2502") bar = size_t(kFirstChar + cls - 1);
        }
        QVERIFY(rule > 0 && bar > 0);
        QTemporaryDir tmp;
        QVERIFY(decoder::saveModel(preferringOneOf(rule, bar), tmp.filePath("model").toStdString()));
        const cv::Mat page = textPage({"The sheets were folded", "and sewn on cords"}, 1200, 500, 1.4);
        auto written = [&](bool boxDrawing) {
            ReaderOptions o;
            o.modelDir = tmp.filePath("model").toStdString();
            o.boxDrawing = boxDrawing;
            auto reader = ReaderEngine::load(o);
            if (!reader) return std::string("(no reader) ") + reader.status().message();
            auto got = (*reader)->readPage(page, 300);  // it may fail (generated weights): a loop names its text
            return got ? got->text.plainText() + " | " + got->failure : got.status().message();
        };
        auto box = [](const std::string& t) { return t.find("\u2500") != std::string::npos || t.find("\u2502") != std::string::npos; };
        const std::string on = written(true), off = written(false);
        QVERIFY2(box(on), on.c_str());
        QVERIFY2(off.find("(no reader)") == std::string::npos && !box(off), off.c_str());
    }

    // A model that would end the page at once (it prefers EOS or PAGE_BREAK at every step) leaves
    // the page empty, with no failure, unless the whole-page rule keeps it reading to the page's
    // last line end: then the page is written, or fails with its reason (generated weights).
    void aPageIsNotEndedBeforeItsLastLine() {
        using namespace reader_vocab;
        QTemporaryDir tmp;
        QVERIFY(decoder::saveModel(preferringOneOf(size_t(kEos), size_t(kPageBreak), true), tmp.filePath("model").toStdString()));
        const cv::Mat page = textPage({"The sheets were folded", "and sewn on cords"}, 1200, 500, 1.4);
        auto read = [&](bool rule) -> std::optional<ReaderPage> {
            ReaderOptions o;
            o.modelDir = tmp.filePath("model").toStdString();
            o.wholePageRule = rule;
            auto reader = ReaderEngine::load(o);
            if (!reader) return std::nullopt;
            auto got = (*reader)->readPage(page, 300);
            if (!got) return std::nullopt;
            return *got;
        };
        const auto off = read(false), on = read(true);
        QVERIFY(off && on);
        qInfo("with the rule: %s | %s", on->text.plainText().c_str(), on->failure.c_str());
        QVERIFY2(off->text.plainText().empty() && off->failure.empty(), off->text.plainText().c_str());
        QVERIFY2(!on->failure.empty() || on->text.plainText().find("sewn") != std::string::npos,
                 (on->text.plainText() + " | " + on->failure).c_str());
    }

    // An untrained reader model (generated weights) loops or runs to the token cap: each page is a
    // failed page with the reason, nothing is exported for it, and the run exits 3.
    void readerFailuresAreFailedPagesWithTheReason() {
        QTemporaryDir tmp;
        QVERIFY(decoder::saveModel(decoder::randomModel(tinyReaderConfig(), 5), tmp.filePath("model").toStdString()));
        const QString project = tmp.filePath("r.quire");
        auto r = runCli({"transcribe", samplePdf(), "--project", project, "--engine", "reader", "--reader-model",
                         tmp.filePath("model"), "--export", "md", "--out", tmp.path()});
        QCOMPARE(r.exitCode, 3);
        auto s = runCli({"status", "--project", project, "--json", "--pages"});
        QVERIFY(s.out.contains("\"failed\":9"));
        QVERIFY2(s.out.contains("decoding loop") || s.out.contains("token cap"), qPrintable(s.out.left(600)));
        // A missing model folder is one clear message before any page.
        auto m = runCli({"transcribe", samplePdf(), "--project", tmp.filePath("m.quire"), "--engine", "reader",
                         "--reader-model", tmp.filePath("nowhere")});
        QCOMPARE(m.exitCode, 2);
        QVERIFY2(m.err.contains("nowhere"), qPrintable(m.err));
    }

    // The shipped reader carries its training counts, and where the front-end reads a character the
    // model never saw, the reader writes that character (the model alone wrote 锁西 for 陕西 and 泊
    // for 沪 on this page: tests/make_rare_characters_page.py).
    void rareCharactersFollowTheFrontEnd() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        QVERIFY2(fs::exists(fs::path(*dir) / "character_counts.tsv"), dir->c_str());
        const cv::Mat page = cv::imread((sourceDir() + "/tests/fixtures/rare_characters_zh.png").toStdString(), cv::IMREAD_GRAYSCALE);
        QVERIFY(!page.empty());
        auto ppocr = PpocrEngine::load(PpocrOptions{});
        QVERIFY2(ppocr, ppocr.status().message().c_str());
        auto front = (*ppocr)->read(page, true, nullptr);
        QVERIFY(front);
        std::string frontText;
        for (const auto& l : front->lines) frontText += l.text;
        ReaderOptions o;
        o.modelDir = *dir;
        auto withCounts = ReaderEngine::load(o);
        o.rareBelow = 0;  // the rule off: the model's own choice
        auto alone = ReaderEngine::load(o);
        QVERIFY2(withCounts && alone, withCounts ? alone.status().message().c_str() : withCounts.status().message().c_str());
        auto a = (*withCounts)->readPage(page, 300);
        auto b = (*alone)->readPage(page, 300);
        QVERIFY2(a && b, a ? b.status().message().c_str() : a.status().message().c_str());
        const std::string text = a->text.plainText(), aloneText = b->text.plainText();
        int read = 0, kept = 0, keptAlone = 0;
        for (const char* c : {"\u9655", "\u6caa", "\u6a71", "\u67ff", "\u68fa", "\u4f84", "\u5bc5"}) {  // 陕沪橱柿棺侄寅
            if (frontText.find(c) == std::string::npos) continue;
            ++read;
            kept += text.find(c) != std::string::npos ? 1 : 0;
            keptAlone += aloneText.find(c) != std::string::npos ? 1 : 0;
        }
        qInfo("front-end read %d of the 7 rare characters; the reader wrote %d of them, %d without the rule:\n%s\n%s", read,
              kept, keptAlone, text.c_str(), aloneText.c_str());
        QVERIFY(read >= 6);
        QCOMPARE(kept, read);
    }
};

QTEST_GUILESS_MAIN(TestReader)
#include "tst_reader.moc"
