// The reader's decoding rules on hand-made inputs, without a model: the re-read loop check, line
// ends and SKIP, where lines meet, line-end and page-end hyphens, lines laid apart, printed
// punctuation, and the training counts file. The rules in whole transcriptions: tst_reader.

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <random>
#include <tuple>

#include "quire/reader/layout_paragraph.h"
#include "quire/reader/page_end_hyphen.h"
#include "quire/reader/reader.h"

using namespace quire;

class TestReaderRules : public QObject {
    Q_OBJECT

private slots:
    // The re-read rule: reading forward with the jitter of line ends and skipped heads is no loop;
    // copying earlier lines again in shrinking pieces is.
    void rereadingEarlierLinesIsALoop() {
        RereadDetector forward(2000);
        std::mt19937 rng(3);
        for (int v = 0; v < 2000; ++v) forward.push(std::max(0, v - int(rng() % 12)));  // jitter under 16
        QVERIFY(!forward.looping());
        QCOMPARE(forward.reread(), 0);
        forward.push(-1);  // a step that attended to no visual token of the page
        QVERIFY(!forward.looping());

        RereadDetector pieces(480);
        for (int v = 0; v < 300; ++v) pieces.push(v);
        for (int start = 100; start < 300 && !pieces.looping(); start += 40)  // again from earlier lines
            for (int v = start; v < 300 && !pieces.looping(); ++v) pieces.push(v);
        QVERIFY(pieces.looping());
        QVERIFY(pieces.reread() > RereadDetector::kMinTokens);
        // The limit grows with the page: the same 65 re-read tokens are no loop on a long page.
        RereadDetector longPage(4000);
        for (int v = 0; v < 300; ++v) longPage.push(v);
        for (int v = 100; v < 165; ++v) longPage.push(v);
        QCOMPARE(longPage.reread(), 65);
        QVERIFY(!longPage.looping());
        RereadDetector shortPage(300);
        for (int v = 0; v < 300; ++v) shortPage.push(v);
        for (int v = 100; v < 165; ++v) shortPage.push(v);
        QVERIFY(shortPage.looping());
    }

    // A line end only once each of the line's visual tokens has been written for (text or SKIP).
    void aLineEndWaitsForTheLinesTokens() {
        using namespace reader_vocab;
        const int a = kFirstChar, b = kFirstChar + 1;
        LineEndRule rule({a, b, kSpace, a, kLineBreak, b, kLineBreak, kLineBreak});  // lines of 4, 1 and 0
        QVERIFY(!rule.allowsLineEnd());
        for (int k = 0; k < 3; ++k) rule.push(false);  // "ab " — the dash in mid-line
        QVERIFY(!rule.allowsLineEnd());
        rule.push(false);  // SKIP counts: the line is written for
        QVERIFY(rule.allowsLineEnd());
        rule.push(false);  // a character the front-end missed: still allowed
        QVERIFY(rule.allowsLineEnd());
        rule.push(true);
        QVERIFY(!rule.allowsLineEnd());
        rule.push(false);
        rule.push(true);
        QVERIFY(rule.allowsLineEnd());  // an empty line may end at once
        rule.push(true);
        QVERIFY(rule.allowsLineEnd());  // past the page's last line end
        rule.push(false);
        QVERIFY(rule.allowsLineEnd());
    }

    // SKIP stands for one visual token: a line takes none once its tokens outnumber its visual
    // tokens by the slack, so a model that skips on must end the line or write.
    void aLineTakesNoSkipPastItsTokens() {
        using namespace reader_vocab;
        const int a = kFirstChar;
        LineEndRule rule({a, a, a, kLineBreak, a, kLineBreak});  // lines of 3 and 1
        for (int k = 0; k < 3 + LineEndRule::kSkipSlack - 1; ++k) {
            QVERIFY(rule.allowsSkip());
            rule.push(false);
        }
        QVERIFY(rule.allowsSkip());
        rule.push(false);  // the line's tokens: its 3 and the slack
        QVERIFY(!rule.allowsSkip());
        QVERIFY(rule.allowsLineEnd());
        rule.push(true);  // the next line starts afresh
        QVERIFY(rule.allowsSkip());
        for (int k = 0; k < 1 + LineEndRule::kSkipSlack; ++k) rule.push(false);
        QVERIFY(!rule.allowsSkip());
        rule.push(true);  // past the page's last line end the rule says nothing
        for (int k = 0; k < 50; ++k) rule.push(false);
        QVERIFY(rule.allowsSkip());
    }

    // The next written token reads on from where the last one looked while that stays in the line
    // being written; attention that left the line does not take the reading place with it.
    void theReadingPlaceStaysInTheLine() {
        using namespace reader_vocab;
        const int a = kFirstChar, b = kFirstChar + 1;
        // Visual tokens: line 0 = 0..3 (end 4), line 1 = 5 (end 6), line 2 empty (end 7).
        LineEndRule rule({a, b, kSpace, a, kLineBreak, b, kLineBreak, kLineBreak});
        QCOMPARE(rule.nextGuess(-1), 0);  // nothing attended yet: the line's first token
        rule.push(false);
        QCOMPARE(rule.nextGuess(0), 1);
        rule.push(false);
        QCOMPARE(rule.nextGuess(2), 3);  // a character the front-end merged: reading follows it
        rule.push(false);
        QCOMPARE(rule.nextGuess(3), 4);  // the line's end
        rule.push(true);
        QCOMPARE(rule.nextGuess(4), 5);  // line 1 starts after line 0's end
        rule.push(false);
        QCOMPARE(rule.nextGuess(1), 6);  // attention went back to line 0: line 1's next by count
        QCOMPARE(rule.nextGuess(-1), 6);
        rule.push(false);
        QCOMPARE(rule.nextGuess(0), 6);  // written past the line's length: its end
        rule.push(true);
        QCOMPARE(rule.nextGuess(2), 7);  // the empty line: its end at once
        rule.push(true);
        QCOMPARE(rule.nextGuess(3), 8);  // past the last line end: the end of the page
    }

    // Where the line being written meets the next: its last visual token and the next line's
    // first. On a Latin-script page the reader masks LINE_JOIN there where the line ends with a
    // letter, digit or closing mark (endsLatinWord) and the next starts with a letter or digit
    // ("so long / that" was written "longthat", "with me.” / My" "me.My").
    void aLineKnowsWhereItMeetsTheNext() {
        using namespace reader_vocab;
        const int a = kFirstChar, b = kFirstChar + 1;
        // line 0 = 0..3 (end 4), line 1 = 5 (end 6), line 2 empty (end 7), line 3 = 8 (end 9).
        LineEndRule rule({a, b, kSpace, a, kLineBreak, b, kLineBreak, kLineBreak, a, kLineBreak});
        using Junction = std::pair<int, int>;
        QCOMPARE(rule.junction(), Junction(3, 5));
        for (int k = 0; k < 4; ++k) rule.push(false);
        QCOMPARE(rule.junction(), Junction(3, 5));  // the same line until its end is written
        rule.push(true);
        QCOMPARE(rule.junction(), Junction(5, -1));  // the next line is empty
        rule.push(false);
        rule.push(true);
        QCOMPARE(rule.junction(), Junction(-1, 8));  // an empty line
        rule.push(true);
        QCOMPARE(rule.junction(), Junction(-1, -1));  // the page's last line: a page break follows

        QVERIFY(isLatinWordCharacter("g") && isLatinWordCharacter("7") && isLatinWordCharacter("\u00e9"));
        QVERIFY(isLatinWordCharacter("\u03b1") && isLatinWordCharacter("\u0434"));  // Greek, Cyrillic
        for (const char* c : {"-", "\u2014", ",", "\u201d", "\u00d7", "\u00a7", "\u7814", "\uff0c", " ", ""})
            QVERIFY2(!isLatinWordCharacter(c), c);
        for (const char* c : {"g", "7", ".", ",", ";", "?", "'", "\u2019", "\u201d", ")"}) QVERIFY2(endsLatinWord(c), c);
        for (const char* c : {"-", "\u2014", "/", "\u201c", "(", "\u3002", " ", ""}) QVERIFY2(!endsLatinWord(c), c);
        for (const char* c : {"\u7814", "\uff0c", "\u3002", "\u3042", "\U00020000"}) QVERIFY2(isCjkCharacter(c), c);
        for (const char* c : {"a", "\u00e9", "\u2014", "\u201c", ""}) QVERIFY2(!isCjkCharacter(c), c);
    }

    // A line-final hyphen the model skipped is written back where the line then ends with a break
    // or a paragraph, not where it joins the next line; a hyphen inside a line, or one the model
    // wrote itself, is never added.
    void aSkippedLineEndHyphenStaysUnlessTheLineJoins() {
        using namespace reader_vocab;
        // visual tokens: "ab-" | "cd" (0..2, end 3, 4..5, end 6); token 1 is also a hyphen mid-line.
        const std::vector<bool> hyphen = {false, true, true, false, false, false, false};
        {
            LineEndHyphen rule(hyphen);
            QCOMPARE(rule.pick(kFirstChar, 0, 2, false), -1);
            QCOMPARE(rule.pick(kFirstChar, 1, 2, false), -1);
            QCOMPARE(rule.pick(kSkip, 2, 2, false), -1);        // the hyphen skipped
            QCOMPARE(rule.pick(kLineBreak, 3, 2, true), 2);     // then a break: written back
            QCOMPARE(rule.pick(kFirstChar, 4, 6, false), -1);
        }
        {
            LineEndHyphen rule(hyphen);
            QCOMPARE(rule.pick(kSkip, 2, 2, false), -1);
            QCOMPARE(rule.pick(kParagraph, 3, 2, true), 2);     // a paragraph end too
        }
        {
            LineEndHyphen rule(hyphen);
            QCOMPARE(rule.pick(kSkip, 2, 2, false), -1);
            QCOMPARE(rule.pick(kLineJoin, 3, 2, true), -1);     // joined: "abcd"
        }
        {
            LineEndHyphen rule(hyphen);
            QCOMPARE(rule.pick(kSkip, 1, 2, false), -1);        // a mid-line hyphen skipped
            QCOMPARE(rule.pick(kFirstChar, 2, 2, false), -1);   // the line's last written
            QCOMPARE(rule.pick(kLineBreak, 3, 2, true), -1);
            QCOMPARE(rule.pick(kSkip, 2, 2, false), -1);        // skipped, then more text: nothing
            QCOMPARE(rule.pick(kFirstChar, 2, 2, false), -1);
            QCOMPARE(rule.pick(kLineBreak, 3, 2, true), -1);
        }
    }

    // A line end the model writes after text on a line the layout sets apart becomes a paragraph,
    // whichever line end it was; a line end elsewhere, a character, or a line end with no text
    // since the last one (a skipped folio beside the head) stays as the model wrote it.
    void aLineLaidApartEndsItsParagraph() {
        using namespace reader_vocab;
        const std::vector<bool> laidApart = {true, false};
        for (int end : {kLineBreak, kSpace, kLineJoin, kParagraph})
            QCOMPARE(layoutParagraph(end, true, true, laidApart, 0), kParagraph);
        QCOMPARE(layoutParagraph(kLineBreak, true, true, laidApart, 1), kLineBreak);  // not laid apart
        QCOMPARE(layoutParagraph(kLineBreak, true, true, laidApart, 2), kLineBreak);  // past the bands
        QCOMPARE(layoutParagraph(kLineBreak, true, false, laidApart, 0), kLineBreak); // no text since
        QCOMPARE(layoutParagraph(kFirstChar, false, true, laidApart, 0), kFirstChar); // not a line end
        QCOMPARE(layoutParagraph(kLineBreak, true, true, {}, 0), kLineBreak);         // rule off: no bands
    }

    // The page's last written word gets back the hyphen that ends its line only where its last
    // character read one of the two letters before that hyphen; a hyphen the model wrote, one
    // after a digit, a line without a hyphen, or a word elsewhere on the line is left as written.
    // A folio written under that line (a line the front-end read as a bare number) does not hide it.
    void aPageEndHyphenIsWrittenBackOnlyAfterItsWord() {
        using namespace reader_vocab;
        const int b = kFirstChar, n = kFirstChar + 1, d = kFirstChar + 2, h = kFirstChar + 3, one = kFirstChar + 4;
        // Visual tokens: "b" | "bin d-" | "11" (a folio), each line with its end (0; end 1; 2..7;
        // end 8; 9..10; end 11).
        const std::vector<int> ids = {b, kLineBreak, b, kFirstChar + 5, n, kSpace, d, h, kLineBreak, one, one, kLineBreak};
        const std::vector<bool> hyphen = {false, false, false, false, false, false, false, true, false, false, false, false};
        std::vector<bool> letter = {true, false, true, true, true, false, true, false, false, true, true, false};
        std::vector<bool> digit = {false, false, false, false, false, false, false, false, false, true, true, false};
        auto keep = [&](std::vector<int> tokens, std::vector<int> attended, const std::vector<bool>& wordChar) {
            std::vector<float> probs(tokens.size(), 0.9f);
            keepPageEndHyphen(ids, wordChar, hyphen, digit, [](size_t v) { return 0.5f + float(v) / 100; }, tokens, probs,
                              attended);
            return std::make_tuple(tokens, attended, probs);
        };
        // "bin d", then the folio "11" as a paragraph of its own: the hyphen goes in after "d".
        QCOMPARE(std::get<0>(keep({b, n, kSpace, d, kParagraph, one, one, kLineBreak}, {2, 4, 5, 6, 8, 9, 10, 11}, letter)),
                 (std::vector<int>{b, n, kSpace, d, h, kParagraph, one, one, kLineBreak}));
        // The same line read as a number that is not bare ("1b"): it is not a folio, nothing added.
        digit[10] = false;
        QCOMPARE(std::get<0>(keep({b, n, kSpace, d, kParagraph, one, b, kLineBreak}, {2, 4, 5, 6, 8, 9, 10, 11}, letter)),
                 (std::vector<int>{b, n, kSpace, d, kParagraph, one, b, kLineBreak}));
        digit[10] = true;
        // "bin d" then the line's end, the last letter read at visual token 6: the hyphen goes in
        // before the line end, with the front-end's probability and place.
        auto [tokens, attended, probs] = keep({b, kLineBreak, b, n, kSpace, d, kLineBreak}, {0, 1, 2, 4, 5, 6, 8}, letter);
        QCOMPARE(tokens, (std::vector<int>{b, kLineBreak, b, n, kSpace, d, h, kLineBreak}));
        QCOMPARE(probs.size(), tokens.size());
        QCOMPARE(attended, (std::vector<int>{0, 1, 2, 4, 5, 6, 7, 8}));
        QCOMPARE(probs[6], 0.57f);
        // The last character read two visual tokens before the hyphen: still within reach.
        QCOMPARE(std::get<0>(keep({b, n, d}, {2, 4, 5}, letter)), (std::vector<int>{b, n, d, h}));
        // Written by the model already: the last character read the hyphen itself.
        QCOMPARE(std::get<0>(keep({b, n, d, h}, {2, 4, 6, 7}, letter)), (std::vector<int>{b, n, d, h}));
        // The last word read further back on the line than the two letters before the hyphen.
        QCOMPARE(std::get<0>(keep({b, n}, {2, 4}, letter)), (std::vector<int>{b, n}));
        // Before the hyphen a digit, not a letter ("1-", a range): nothing added.
        letter[6] = false;
        QCOMPARE(std::get<0>(keep({b, n, one}, {2, 4, 6}, letter)), (std::vector<int>{b, n, one}));
        letter[6] = true;
        // The written text ends on the first line, which ends without a hyphen.
        QCOMPARE(std::get<0>(keep({b, kLineBreak}, {0, 1}, letter)), (std::vector<int>{b, kLineBreak}));
        // Nothing written, or a last character that read no visual token.
        QCOMPARE(std::get<0>(keep({}, {}, letter)), std::vector<int>{});
        QCOMPARE(std::get<0>(keep({b, n, d}, {2, 4, -1}, letter)), (std::vector<int>{b, n, d}));
        // A last character whose visual token is past the page's (no such token): left as written.
        QCOMPARE(std::get<0>(keep({b, n, d}, {2, 4, 40}, letter)), (std::vector<int>{b, n, d}));
    }

    // Old books' spaced punctuation and long dashes the front-end reads as two dashes come out as
    // reading text on Latin-script pages; spaces after digits, around straight quotes, single
    // dashes and long runs of dashes stay as read.
    void printedSpacingAndDashesBecomeReadingText() {
        using namespace reader_vocab;
        using P = PrintedPunctuation;
        const int a = kFirstChar, semi = kFirstChar + 1, hyph = kFirstChar + 2, em = kFirstChar + 3, quote = kFirstChar + 4;
        const std::vector<int> dashes = {hyph, em};
        QCOMPARE(P::kindOf("e"), P::Letter);
        QCOMPARE(P::kindOf("4"), P::Digit);
        QCOMPARE(P::kindOf(":"), P::Closing);
        QCOMPARE(P::kindOf("\u201c"), P::Opening);
        QCOMPARE(P::kindOf("\u2019"), P::Other);  // opens and closes: left alone
        QCOMPARE(P::kindOf("-"), P::Dash);
        QCOMPARE(P::kindOf("\u2014"), P::LongDash);
        QVERIFY(P::isDash("\u2013") && !P::isDash("~"));
        {   // "a ;3 :": the space after a letter goes, the one after a digit stays
            P rule({P::Letter, P::Space, P::Closing, P::Digit, P::Space, P::Closing}, dashes, em, true);
            QCOMPARE(rule.pick(a, 0), a);
            QCOMPARE(rule.pick(kSpace, 1), kSkip);
            QCOMPARE(rule.pick(semi, 2), semi);
            QCOMPARE(rule.pick(a, 3), a);
            QCOMPARE(rule.pick(kSpace, 4), kSpace);
        }
        {   // the spacing rule off (French): the space stays
            P rule({P::Letter, P::Space, P::Closing}, dashes, em, false);
            QCOMPARE(rule.pick(a, 0), a);
            QCOMPARE(rule.pick(kSpace, 1), kSpace);
        }
        {   // "“ a": dropped only where the model wrote the opening mark itself
            P rule({P::Opening, P::Space, P::Letter}, dashes, em, true);
            QCOMPARE(rule.pick(quote, 0), quote);
            QCOMPARE(rule.pick(kSpace, 1), kSkip);
            P skipped({P::Opening, P::Space, P::Letter}, dashes, em, true);
            QCOMPARE(skipped.pick(kSkip, 0), kSkip);
            QCOMPARE(skipped.pick(kSpace, 1), kSpace);
        }
        {   // "a—-a": one em dash, whichever dash the model writes first
            P rule({P::Letter, P::LongDash, P::Dash, P::Letter}, dashes, em, true);
            QCOMPARE(rule.pick(a, 0), a);
            QCOMPARE(rule.pick(em, 1), em);
            QVERIFY(rule.inWrittenDash(1) && rule.inWrittenDash(2) && !rule.inWrittenDash(3) && !rule.inWrittenDash(0));
            QCOMPARE(rule.pick(hyph, 2), kSkip);
            QCOMPARE(rule.pick(a, 3), a);
            P second({P::Letter, P::Dash, P::LongDash, P::Letter}, dashes, em, true);
            QCOMPARE(second.pick(kSkip, 1), kSkip);
            QCOMPARE(second.pick(em, 2), em);
            QCOMPARE(second.pick(hyph, 2), kSkip);  // (the run's dash is written)
        }
        {   // "a-—a" with the model writing the hyphen: "—"
            P rule({P::Letter, P::Dash, P::LongDash, P::Letter}, dashes, em, true);
            QCOMPARE(rule.pick(hyph, 1), em);
            QCOMPARE(rule.pick(em, 2), kSkip);
        }
        {   // hyphens alone ("--", a single one), a rule of four dashes, the dash rule off: as read
            P rule({P::Letter, P::Dash, P::Letter, P::Dash, P::Dash, P::Letter, P::LongDash, P::LongDash, P::LongDash,
                    P::LongDash}, dashes, em, true);
            QCOMPARE(rule.pick(hyph, 1), hyph);
            QCOMPARE(rule.pick(hyph, 3), hyph);
            QCOMPARE(rule.pick(hyph, 4), hyph);
            QCOMPARE(rule.pick(em, 6), em);
            QCOMPARE(rule.pick(em, 7), em);
            QVERIFY(!rule.inWrittenDash(3) && !rule.inWrittenDash(6));  // nothing was joined
            P off({P::Letter, P::LongDash, P::Dash, P::Letter}, dashes, -1, true);
            QCOMPARE(off.pick(em, 1), em);
            QVERIFY(!off.inWrittenDash(1));
            QCOMPARE(off.pick(hyph, 2), hyph);
        }
    }

    // character_counts.tsv: checked line by line, the file and line named; characters under the
    // count, and those it does not list, are rare.
    void characterCountsAreReadOrRefused() {
        using namespace reader_vocab;
        QTemporaryDir tmp;
        auto write = [&](const char* name, const std::string& body) {
            const std::string path = tmp.filePath(name).toStdString();
            std::ofstream(path, std::ios::binary) << body;
            return path;
        };
        // By vocabulary id: four characters from kFirstChar on, none elsewhere.
        std::vector<std::string> chars(size_t(kFirstChar + 5));
        const char* const four[] = {"a", "b", "\u7814", " "};
        for (size_t k = 0; k < 4; ++k) chars[size_t(kFirstChar) + k] = four[k];
        auto ok = readRareCharacters(write("ok.tsv", "character\tcount\na\t40\n\u7814\t3\n \t100\n"), 30, chars);
        QVERIFY2(ok, ok.status().message().c_str());
        QCOMPARE(ok->size(), chars.size());
        QVERIFY(!(*ok)[kFirstChar] && (*ok)[kFirstChar + 1] && (*ok)[kFirstChar + 2] && !(*ok)[kFirstChar + 3]);
        QVERIFY(!(*ok)[kSpace] && !(*ok)[kFirstChar + 4]);
        const std::vector<std::pair<std::string, std::string>> bad = {
            {"", "empty"}, {"char\tcount\n", ":1: expected the header"}, {"character\tcount\na 40\n", ":2: expected a character"},
            {"character\tcount\na\t4x\n", ":2: the count \"4x\""}, {"character\tcount\na\t1\nb\t2\na\t3\n", ":4: the character is listed twice"}};
        for (size_t k = 0; k < bad.size(); ++k) {
            const std::string path = write(("bad" + std::to_string(k) + ".tsv").c_str(), bad[k].first);
            auto r = readRareCharacters(path, 30, chars);
            QVERIFY(!r);
            const std::string msg = r.status().message();
            QVERIFY2(msg.find(path) != std::string::npos && msg.find(bad[k].second) != std::string::npos, msg.c_str());
        }
        QVERIFY(!readRareCharacters(tmp.filePath("none.tsv").toStdString(), 30, chars));
    }

};

QTEST_GUILESS_MAIN(TestReaderRules)
#include "tst_reader_rules.moc"
