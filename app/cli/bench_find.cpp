// quire-cli bench find: a book of N generated pages (about 2,000 characters each, words drawn
// with a Zipf-like law from a fixed list, one seeded generator) in a temporary project; then each
// search mode over the whole book (best of five), Replace All and its undo, timed side by side.
#include "bench_find.h"

#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include "quire/store/book_search.h"

namespace quire::cli {

namespace {

const char* kWords[] = {"the", "of", "and", "to", "a", "in", "that", "was", "his", "he", "it", "with", "is", "for",
                        "as", "had", "you", "not", "be", "her", "on", "at", "by", "which", "have", "or", "from",
                        "this", "him", "but", "all", "she", "they", "were", "my", "are", "me", "one", "their",
                        "so", "an", "said", "them", "we", "who", "would", "been", "will", "no", "when", "there",
                        "colour", "harbour", "governor", "province", "settlement", "expedition", "Spaniards",
                        "coast", "river", "letter", "council", "voyage", "island", "Cortez", "Excellency",
                        "history", "colonial", "northern", "afterwards", "themselves", "encountered",
                        "hyphen-", "ated", "1768,", "(p.", "12)", "Florida;", "“such", "favour”"};

PageText generatedPage(std::mt19937& rng) {
    PageText t;
    t.width = 2480, t.height = 3508, t.engine = "generated";
    const int n = int(sizeof kWords / sizeof *kWords);
    std::vector<double> weights;
    for (int i = 0; i < n; ++i) weights.push_back(1.0 / (i + 1));
    std::discrete_distribution<int> pick(weights.begin(), weights.end());
    for (int line = 0, chars = 0; chars < 2000; ++line) {
        Line l;
        l.paragraph = line / 12;
        for (int x = 150, width = 0; width < 62;) {
            std::string w = kWords[pick(rng)];
            width += int(w.size()) + 1;
            l.words.push_back({w, {x, 150 + line * 60, int(w.size()) * 28, 48}, 90, {}});
            x += int(w.size()) * 28 + 20;
        }
        chars += int(l.text().size()) + 1;
        t.lines.push_back(std::move(l));
    }
    return t;
}

double msSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int benchFind(const Args& args) {
    const int pages = std::stoi(args.value("pages", "300"));
    if (pages < 1 || pages > 100000) {
        std::cerr << "quire-cli bench find: --pages must be between 1 and 100000\n";
        return 2;
    }
    QTemporaryDir dir;
    auto store = ProjectStore::open(QDir(dir.path()).filePath("bench.quire").toStdString());
    if (!store) {
        std::cerr << store.status().message() << "\n";
        return 1;
    }
    DocumentRecord doc{0, "/generated/book.tif", "tiff", "generated", 0, pages, 0};
    std::vector<std::pair<std::string, int>> files;
    for (int i = 0; i < pages; ++i) files.emplace_back(doc.path, i);
    if (auto id = (*store)->addDocument(doc, files); !id) {
        std::cerr << id.status().message() << "\n";
        return 1;
    }
    std::mt19937 rng(1868);
    size_t chars = 0;
    for (const auto& p : *(*store)->pages()) {
        PageOutcome o;
        o.text = generatedPage(rng);
        o.region = {0, 0, o.text.width, o.text.height};
        chars += o.text.plainText().size();
        if (Status s = (*store)->saveResult(p.id, {o}); !s) {
            std::cerr << s.message() << "\n";
            return 1;
        }
    }
    QJsonObject out{{"pages", pages}, {"characters", qint64(chars)}};
    const std::pair<const char*, SearchQuery> queries[] = {
        {"plain", {"colour", SearchMode::Plain, false}},
        {"whole_word", {"colour", SearchMode::WholeWord, false}},
        {"regex", {"\\b(gover|provi)n\\w+", SearchMode::Regex, false}},
    };
    std::printf("bench find: %d generated pages, %zu characters\n", pages, chars);
    for (const auto& [name, q] : queries) {
        double best = 1e30;
        size_t hits = 0;
        for (int r = 0; r < 5; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            auto h = findInBook(**store, q);
            best = std::min(best, msSince(t0));
            hits = h ? h->size() : 0;
        }
        std::printf("  find all, %-10s %7zu hits  %8.1f ms\n", name, hits, best);
        out[QString("find_%1_ms").arg(name)] = best;
        out[QString("find_%1_hits").arg(name)] = qint64(hits);
    }
    auto t0 = std::chrono::steady_clock::now();
    auto r = replaceInBook(**store, {"colour", SearchMode::WholeWord, false}, "color");
    const double replaceMs = msSince(t0);
    if (!r) {
        std::cerr << r.status().message() << "\n";
        return 1;
    }
    t0 = std::chrono::steady_clock::now();
    const Status undo = (*store)->removeCorrections(r->correctionIds);
    const double undoMs = msSince(t0);
    std::printf("  replace all   %7d hits on %d pages  %8.1f ms; undo %8.1f ms\n", r->hits, r->pages, replaceMs, undoMs);
    out["replace_all_ms"] = replaceMs;
    out["replace_all_pages"] = r->pages;
    out["undo_ms"] = undoMs;
    if (!undo) return 1;
    if (args.has("json")) std::cout << QJsonDocument(out).toJson(QJsonDocument::Compact).toStdString() << std::endl;
    return 0;
}

}  // namespace quire::cli
