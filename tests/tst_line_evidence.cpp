// Tesseract's glyphs as evidence for the reader (issue #29, item 2): the glyphs spell Tesseract's
// words with their LSTM alternatives, alignLineEvidence lays them on the front-end's characters by
// text and position, `quire-cli features --evidence` writes them beside the visual tokens, and the
// reader's evidence prior (ReaderOptions::evidencePrior) weighs them while it decodes.
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <opencv2/imgcodecs.hpp>

#include "quire/decoder/model.h"
#include "quire/ppocr/ppocr.h"
#include "quire/reader/reader.h"
#include "quire/recognizers/line_evidence.h"
#include "quire/recognizers/recognizer.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;

namespace {

// A word of glyphs 20 px wide on a line 40 px high at y 100, the first glyph's left edge at x.
Word word(const std::string& text, int x) {
    Word w;
    w.text = text;
    w.box = {x, 100, 20 * int(text.size()), 40};
    for (size_t k = 0; k < text.size(); ++k)
        w.glyphs.push_back({text.substr(k, 1), {x + 20 * int(k), 100, 20, 40}, 90, {{text.substr(k, 1), 90}}});
    return w;
}

PageText page(std::vector<Word> words) {
    PageText p;
    Line l;
    for (auto& w : words) l.words.push_back(std::move(w));
    l.box = {0, 100, 1000, 40};
    p.lines.push_back(std::move(l));
    return p;
}

// The front-end's characters of `text`, each centred in its 20 px cell from x.
void frontEnd(const std::string& text, int x, std::vector<std::string>& chars, std::vector<float>& xs) {
    for (size_t k = 0; k < text.size(); ++k) {
        chars.push_back(text.substr(k, 1));
        xs.push_back(float(x + 20 * int(k) + 10));
    }
}

// The JSON metadata of a safetensors file ("__metadata__"'s "quire.features").
QJsonObject featuresMeta(const QString& file) {
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QByteArray head = f.read(8);
    if (head.size() != 8) return {};
    quint64 n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | quint8(head[i]);
    const auto header = QJsonDocument::fromJson(f.read(qint64(n))).object();
    return QJsonDocument::fromJson(header["__metadata__"].toObject()["quire.features"].toString().toUtf8()).object();
}

}  // namespace

class TstLineEvidence : public QObject {
    Q_OBJECT

private slots:
    // `features` prepares a page as a transcription run does: a turn OSD proposes for an upright
    // page (tst_preprocess's fixture) is read before it is made, so every line's frames run left to
    // right across the page and the front-end reads its words.
    void featuresTurnOnlyWhatReadsBetter() {
        QTemporaryDir dir;
        const auto r = runCli({"features", sourceDir() + "/tests/fixtures/two_columns_osd_upside_down.png", "--out",
                               dir.filePath("f")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QJsonArray lines = featuresMeta(dir.filePath("f/page-00001.safetensors"))["lines"].toArray();
        QVERIFY(lines.size() > 50);
        QString text;
        for (const auto v : lines) {
            const QJsonArray x = v.toObject()["frame_x"].toArray();
            QVERIFY(x.size() > 1);
            QVERIFY2(x.first().toInt() < x.last().toInt(), qPrintable(v.toObject()["text"].toString()));
            text += v.toObject()["text"].toString() + "\n";
        }
        QVERIFY2(text.contains("righteousness") && text.contains("commandment"), qPrintable(text.left(400)));
    }

    // Equal characters at their places pair; a misread character pairs with the glyph at its place;
    // a word space gets the word break; a glyph the front-end missed goes before the next character.
    void glyphsPairByTextAndPlace() {
        // Tesseract: "the cat." ; the front-end: "the cot" with the full stop missed and "he" read as one cell off.
        const PageText other = page({word("the", 100), word("cat.", 180)});
        std::vector<std::string> chars;
        std::vector<float> xs;
        frontEnd("the cot", 100, chars, xs);
        xs[3] = 170;  // the restored space sits in the gap
        chars[4] = "c", xs[4] = 190;
        chars[5] = "o", xs[5] = 210;
        chars[6] = "t", xs[6] = 230;
        const LineEvidence ev = alignLineEvidence(chars, xs, {90, 100, 400, 40}, other);
        QCOMPARE(int(ev.glyphs.size()), 7);
        QCOMPARE(int(ev.chars.size()), 7);
        const std::vector<int> want{0, 1, 2, -1, 3, 4, 5};
        for (size_t i = 0; i < want.size(); ++i) QCOMPARE(ev.chars[i].glyph, want[i]);
        QCOMPARE(ev.glyphs[size_t(ev.chars[5].glyph)].text, std::string("a"));  // "o" read where Tesseract has "a"
        QVERIFY(ev.chars[3].breakBefore);   // the space
        for (size_t i : {0, 1, 2, 4, 5, 6}) QVERIFY(!ev.chars[i].breakBefore);
        QCOMPARE(ev.trailing, std::string("."));
        QVERIFY(ev.wordStarts[0] && ev.wordStarts[3] && !ev.wordStarts[4]);
    }

    void missedCharactersAndMissedSpaces() {
        // Tesseract: "in the"; the front-end: "inhe" — the space and the "t" missed.
        const PageText other = page({word("in", 100), word("the", 160)});
        std::vector<std::string> chars{"i", "n", "h", "e"};
        std::vector<float> xs{110, 130, 190, 210};
        const LineEvidence ev = alignLineEvidence(chars, xs, {90, 100, 400, 40}, other);
        QCOMPARE(ev.chars[0].glyph, 0);
        QCOMPARE(ev.chars[1].glyph, 1);
        QCOMPARE(ev.chars[2].glyph, 3);
        QCOMPARE(ev.chars[2].before, std::string("t"));
        QVERIFY(ev.chars[2].breakBefore);  // the word break the front-end has no space for
        QVERIFY(ev.trailing.empty());
    }

    // Glyphs of another line, or far along this one, are never paired.
    void farGlyphsStayApart() {
        PageText other = page({word("abc", 100)});
        Line below;
        below.box = {0, 200, 1000, 40};
        Word w = word("xyz", 100);
        w.box.y = 200;
        for (auto& g : w.glyphs) g.box.y = 200;
        below.words.push_back(w);
        other.lines.push_back(below);
        std::vector<std::string> chars{"a", "b", "c"};
        std::vector<float> xs{510, 530, 550};  // the same letters, twenty cells to the right
        const LineEvidence ev = alignLineEvidence(chars, xs, {90, 100, 600, 40}, other);
        QCOMPARE(int(ev.glyphs.size()), 3);  // not the line below
        for (const auto& c : ev.chars) QCOMPARE(c.glyph, -1);
        QCOMPARE(ev.chars[0].before, std::string("abc"));
        // No glyphs at all: nothing paired, nothing inserted.
        const LineEvidence none = alignLineEvidence(chars, xs, {90, 100, 600, 40}, PageText{});
        for (const auto& c : none.chars) QVERIFY(c.glyph == -1 && c.before.empty() && !c.breakBefore);
    }

    // Tesseract's glyphs spell its words, lie in their boxes and lead their own alternatives; asking
    // for them leaves the text as it was.
    void tesseractGlyphsSpellItsWords() {
        const cv::Mat img = textPage({"Quire reads whole volumes of books,", "page after page: 1823 and 1920."});
        RecognizerOptions o;
        o.engine = "tesseract";
        auto plain = createRecognizer(o);
        QVERIFY2(plain, plain.status().message().c_str());
        o.glyphChoices = true;
        auto withGlyphs = createRecognizer(o);
        QVERIFY2(withGlyphs, withGlyphs.status().message().c_str());
        auto a = (*plain)->recognize(img, 300);
        auto b = (*withGlyphs)->recognize(img, 300);
        QVERIFY(a && b);
        QCOMPARE(QString::fromStdString(b->plainText()), QString::fromStdString(a->plainText()));
        QVERIFY(b->wordCount() >= 10);
        int glyphs = 0, withAlternatives = 0;
        for (const auto& l : b->lines)
            for (const auto& w : l.words) {
                std::string spelled;
                for (const auto& g : w.glyphs) {
                    spelled += g.text;
                    ++glyphs;
                    QVERIFY2(!g.choices.empty() && g.choices[0].text == g.text, g.text.c_str());
                    if (g.choices.size() > 1) ++withAlternatives;
                    const int cx = g.box.x + g.box.w / 2;
                    QVERIFY2(cx >= w.box.x - 2 && cx <= w.box.right() + 2, w.text.c_str());
                }
                QCOMPARE(QString::fromStdString(spelled), QString::fromStdString(w.text));
            }
        QVERIFY(withAlternatives > 0);
        for (const auto& l : a->lines)
            for (const auto& w : l.words) QVERIFY(w.glyphs.empty());
        qInfo("%d glyphs, %d with alternatives", glyphs, withAlternatives);
    }

    // `features --evidence`: every line's characters carry a pairing, and on a clean page nearly
    // every character is paired with Tesseract's same character.
    void featuresCarryTheEvidence() {
        QTemporaryDir dir;
        const QString scan = dir.filePath("page.png");
        QVERIFY(cv::imwrite(scan.toStdString(),
                            textPage({"The second volume of the records", "was bound in 1823 with its index."})));
        const auto r = runCli({"features", scan, "--out", dir.filePath("f"), "--evidence"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QJsonObject meta = featuresMeta(dir.filePath("f/page-00001.safetensors"));
        const QJsonArray lines = meta["lines"].toArray();
        QCOMPARE(lines.size(), 2);
        int chars = 0, same = 0;
        for (const auto v : lines) {
            const QJsonObject line = v.toObject();
            const QJsonObject ev = line["tesseract"].toObject();
            const QJsonArray ids = line["char_ids"].toArray(), paired = ev["char_glyph"].toArray(),
                             glyphs = ev["glyphs"].toArray(), breaks = ev["char_break_before"].toArray();
            QCOMPARE(paired.size(), ids.size());
            QCOMPARE(breaks.size(), ids.size());
            QVERIFY(!glyphs.isEmpty());
            const QString text = line["text"].toString();
            QCOMPARE(text.size(), ids.size());  // Latin text: one UTF-16 unit per character
            for (int k = 0; k < ids.size(); ++k) {
                if (text[k] == ' ') continue;
                ++chars;
                const int g = paired[k].toInt();
                if (g >= 0 && glyphs[g].toObject()["text"].toString() == QString(text[k])) ++same;
            }
        }
        QVERIFY2(same >= chars * 9 / 10, qPrintable(QString("%1 of %2").arg(same).arg(chars)));
        // Without --evidence the lines carry none.
        const auto plain = runCli({"features", scan, "--out", dir.filePath("g")});
        QVERIFY2(plain.exitCode == 0, qPrintable(plain.err));
        QVERIFY(!featuresMeta(dir.filePath("g/page-00001.safetensors"))["lines"].toArray()[0].toObject().contains("tesseract"));
    }

    // Where Tesseract's glyph differs from the front-end's character, enough nats of evidence prior
    // make the reader write the glyph; without the prior it writes the front-end's; decoding with
    // drafts writes what one token at a time writes.
    void evidencePriorWeighsTesseractsGlyph() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        ReaderOptions o;
        o.modelDir = *dir;
        auto plain = ReaderEngine::load(o);
        o.evidencePrior = 40.f;
        auto weighed = ReaderEngine::load(o);
        o.draft = false;
        auto stepwise = ReaderEngine::load(o);
        QVERIFY2(plain && weighed && stepwise, "the reader loads");
        const cv::Mat img = textPage({"The binder sewed the sheets", "on cords of hemp."}, 1500, 400, 1.3);
        auto encoded = (*plain)->encode(img);
        QVERIFY2(encoded, encoded.status().message().c_str());
        PpocrPage page = *encoded;
        // Tesseract "read" a "z" where the front-end read the "e" of "sheets" (and agreed elsewhere).
        bool marked = false;
        for (auto& line : page.lines) {
            const size_t at = line.text.find("sheets");
            if (at == std::string::npos) continue;
            line.evidence.assign(line.charIds.size(), {});
            line.evidenceConf.assign(line.charIds.size(), 0.f);
            for (size_t c = 0; c < line.charIds.size(); ++c) {
                line.evidence[c] = (*plain)->frontEnd().charOf(line.charIds[c]);
                line.evidenceConf[c] = 1.f;
            }
            line.evidence[at + 2] = "z";  // one byte a character on this Latin line
            marked = true;
        }
        QVERIFY2(marked, "the front-end reads \"sheets\"");
        auto a = (*plain)->readEncoded(page, 300);
        auto b = (*weighed)->readEncoded(page, 300);
        auto c = (*stepwise)->readEncoded(page, 300);
        QVERIFY(a && b && c);
        const QString plainText = QString::fromStdString(a->text.plainText());
        const QString weighedText = QString::fromStdString(b->text.plainText());
        QVERIFY2(plainText.contains("sheets"), qPrintable(plainText));
        QVERIFY2(weighedText.contains("shzets"), qPrintable(weighedText));
        QCOMPARE(QString(weighedText).replace("shzets", "sheets"), plainText);
        QCOMPARE(QString::fromStdString(c->text.plainText()), weighedText);
    }

    // A model that reads Tesseract's evidence (visual_evidence_ids): the reader's recognizer runs
    // Tesseract on each page and lays its glyphs into the visual tokens (ReaderEngine::visualTokens),
    // so the decoder's pages carry them. Made here from the shipped model (less its own evidence
    // weights, where it has some) with the evidence given no weight (zero gains, zero projector
    // columns) it writes what that plain model writes; with the paired glyph's embedding subtracted
    // four times over (gain −4: where Tesseract agrees, the token's own id is outweighed; at −1, only
    // cancelled, run 36 still reads the line from the token's features) the text falls apart, which
    // it can only do if the ids arrive.
    void aReaderModelReadsTesseractsEvidence() {
        auto shipped = findReaderModel();
        if (!shipped) QSKIP("no reader model is shipped");
        auto base = decoder::loadModel(*shipped);
        QVERIFY2(base, base.status().message().c_str());
        QTemporaryDir tmp;
        // A model with `visualDim` columns of the plain one's visual projection (the rest zero) and
        // `evidenceIds` evidence ids at `gain`, saved as tmp/name.
        auto withVisual = [&](const decoder::ModelWeights& from, const char* name, int visualDim, int evidenceIds,
                              float gain) {
            decoder::ModelWeights m = from;
            const int H = m.config.hiddenSize, V = from.config.visualDim, keep = std::min(V, visualDim);
            m.config.visualDim = visualDim;
            m.config.visualEvidenceIds = evidenceIds;
            std::vector<float> w(size_t(H) * visualDim, 0.f);
            for (int r = 0; r < H; ++r) std::copy_n(&from.visualW[size_t(r) * V], keep, &w[size_t(r) * visualDim]);
            m.visualW = std::move(w);
            m.evidenceGain.assign(size_t(evidenceIds) * H, 0.f);
            if (evidenceIds) std::fill_n(m.evidenceGain.begin(), H, gain);  // the paired glyph's
            const std::string dir = tmp.filePath(name).toStdString();
            if (!decoder::saveModel(m, dir)) return std::string();
            std::filesystem::copy_file(std::filesystem::path(*shipped) / "character_counts.tsv",
                                       std::filesystem::path(dir) / "character_counts.tsv");
            return dir;
        };
        // The plain model: the shipped one, or, where that reads the evidence itself, the shipped one
        // without its evidence columns and gains.
        const bool shippedReadsEvidence = (**base).config.visualEvidenceIds > 0;
        const std::string plainDir =
            shippedReadsEvidence ? withVisual(**base, "plain", reader_vocab::kVisualDim, 0, 0.f) : *shipped;
        QVERIFY(!plainDir.empty());
        auto plainModel = decoder::loadModel(plainDir);
        QVERIFY2(plainModel, plainModel.status().message().c_str());
        auto evidenceModel = [&](const char* name, float gain) {
            return withVisual(**plainModel, name, reader_vocab::kVisualDim + reader_vocab::kEvidenceValues,
                              reader_vocab::kEvidenceIds, gain);
        };
        const std::string quiet = evidenceModel("quiet", 0.f), loud = evidenceModel("loud", -4.f);
        QVERIFY(!quiet.empty() && !loud.empty());
        const cv::Mat img = textPage({"The binder sewed the sheets", "on cords of hemp and linen."}, 1500, 400, 1.3);
        auto read = [&](const std::string& model, DecoderCheckpoint* cp, const char* lang = "eng") -> std::string {
            RecognizerOptions o;
            o.engine = "reader";
            o.readerModel = model;
            o.languages = lang;
            auto r = createRecognizer(o);
            if (!r) return "load: " + r.status().message();
            auto text = (*r)->recognize(img, 300);
            if (!text) return "read: " + text.status().message();
            if (cp) *cp = (*r)->checkpoint();
            return text->plainText();
        };
        DecoderCheckpoint cp;
        const std::string plain = read(plainDir, nullptr), withQuiet = read(quiet, &cp), withLoud = read(loud, nullptr);
        QVERIFY2(plain.find("sheets") != std::string::npos, plain.c_str());
        QCOMPARE(QString::fromStdString(withQuiet), QString::fromStdString(plain));
        QVERIFY2(withLoud != plain, withLoud.c_str());
        // Chinese transcriptions get no evidence (chi_sim's glyphs do not pay; docs/RUNS.md, run 16).
        QCOMPARE(QString::fromStdString(read(loud, nullptr, "chi_sim")), QString::fromStdString(read(plainDir, nullptr, "chi_sim")));
        // The page as the decoder got it (as the store keeps it): 130 floats a token, Tesseract's glyph paired with nearly
        // every character and the same as the front-end's.
        QCOMPARE(cp.newPages.size(), size_t(1));
        const std::vector<float>& v = cp.newPages[0];
        const size_t stride = reader_vocab::kVisualDim + reader_vocab::kEvidenceValues + 1 + reader_vocab::kEvidenceIds;
        const decoder::ModelConfig& mc = (**base).config;
        const size_t summary = size_t(mc.numLayers) * mc.numKvHeads * mc.headDim;  // the page's gate summary, after it
        QCOMPARE((v.size() - summary) % stride, size_t(0));
        int chars = 0, same = 0;
        for (size_t t = 0; t < (v.size() - summary) / stride; ++t) {
            const float* row = &v[t * stride];
            const int id = int(row[127]);
            if (id < reader_vocab::kFirstChar) continue;
            ++chars;
            if (row[125] == 1.f && int(row[128]) == id && row[124] > 0.5f) ++same;
        }
        QVERIFY2(chars > 30 && same >= chars * 9 / 10, qPrintable(QString("%1 of %2").arg(same).arg(chars)));

        // Training's evidence is the runtime's: `features --evidence` on the same page, laid out by
        // tools/train/data.py's rule (page_visual_tokens), gives every token the same five values.
        const QString scan = tmp.filePath("page.png");
        QVERIFY(cv::imwrite(scan.toStdString(), img));
        const auto r = runCli({"features", scan, "--out", tmp.filePath("f"), "--evidence"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        auto front = PpocrEngine::load(PpocrOptions{});
        QVERIFY(front);
        QHash<QString, int> vocab;  // data.py's vocab.index
        for (int cls = reader_vocab::kKeyCount; cls >= 1; --cls)  // the first class wins, as in the reader
            vocab.insert(QString::fromStdString((*front)->charOf(cls)), reader_vocab::kFirstChar + cls - 1);
        auto idOf = [&](const QString& glyph) { return float(vocab.value(glyph, -1)); };  // -1 where it has none
        auto firstOf = [](const QString& s) { return s.isEmpty() ? s : s.left(s[0].isHighSurrogate() ? 2 : 1); };
        std::vector<float> expected;
        for (const auto lv : featuresMeta(tmp.filePath("f/page-00001.safetensors"))["lines"].toArray()) {
            const QJsonObject line = lv.toObject(), ev = line["tesseract"].toObject();
            const QJsonArray glyphs = ev["glyphs"].toArray(), paired = ev["char_glyph"].toArray();
            for (int c = 0; c < line["char_ids"].toArray().size(); ++c) {
                const int g = paired[c].toInt();
                const QJsonObject glyph = g >= 0 ? glyphs[g].toObject() : QJsonObject{};
                expected.insert(expected.end(), {g >= 0 ? float(glyph["confidence"].toDouble() / 100.0) : 0.f, g >= 0 ? 1.f : 0.f,
                                                 ev["char_break_before"].toArray()[c].toInt() ? 1.f : 0.f,
                                                 g >= 0 ? idOf(glyph["text"].toString()) : -1.f,
                                                 idOf(firstOf(ev["char_before"].toArray()[c].toString()))});
            }
            expected.insert(expected.end(), {0.f, 0.f, 0.f, -1.f, idOf(firstOf(ev["trailing"].toString()))});
        }
        std::vector<float> got;
        for (size_t t = 0; t < (v.size() - summary) / stride; ++t) {
            const float* row = &v[t * stride];
            got.insert(got.end(), {row[124], row[125], row[126], row[128], row[129]});
        }
        QCOMPARE(got.size(), expected.size());
        for (size_t k = 0; k < got.size(); ++k)
            QVERIFY2(std::abs(got[k] - expected[k]) < 1e-4f,
                     qPrintable(QString("token %1, value %2: %3 at run time, %4 in training").arg(k / 5).arg(k % 5).arg(got[k]).arg(expected[k])));
    }

    // quire-cli takes the prior from QUIRE_READER_EVIDENCE (a measurement setting) and names a
    // malformed value.
    void cliNamesAMalformedEvidencePrior() {
        QTemporaryDir dir;
        const QString scan = dir.filePath("page.png");
        QVERIFY(cv::imwrite(scan.toStdString(), textPage({"A page of the register."})));
        qputenv("QUIRE_READER_EVIDENCE", "lots");
        const auto r = runCli({"transcribe", scan, "--project", dir.filePath("p.quire"), "--engine", "reader"});
        qunsetenv("QUIRE_READER_EVIDENCE");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("QUIRE_READER_EVIDENCE"), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TstLineEvidence)
#include "tst_line_evidence.moc"
