// quire-cli find: every hit of a text or pattern in the book, and Replace All.
#include "find_command.h"

#include <QJsonArray>
#include <QJsonObject>

#include <iostream>
#include <optional>
#include <set>

#include "command_support.h"
#include "quire/store/book_search.h"

namespace quire::cli {

int findCommand(const Args& args, const std::atomic<bool>* cancel) {
    SearchQuery query;
    if (args.has("text") == args.has("regex")) return fail(kUsage, "find needs one of --text T or --regex R");
    query.pattern = args.value("text") ? *args.value("text") : *args.value("regex");
    query.mode = args.has("regex") ? SearchMode::Regex : args.has("whole-word") ? SearchMode::WholeWord : SearchMode::Plain;
    if (args.has("regex") && args.has("whole-word")) return fail(kUsage, "--whole-word goes with --text, not --regex");
    query.matchCase = args.has("match-case");
    if (auto s = BookSearch::compile(query); !s) return fail(kUsage, s.status().message());
    const auto replacement = args.value("replace");
    auto store = openProject(args, replacement ? ProjectStore::Mode::OpenExisting : ProjectStore::Mode::ReadOnly);
    if (!store) return fail(exitFor(store.status()), store.status().message());
    auto hits = findInBook(**store, query, 0, cancel);
    if (!hits) return fail(hits.status().code() == ErrorCode::Cancelled ? kInternal : exitFor(hits.status()), hits.status().message());
    std::optional<Replacement> done;
    if (replacement) {
        auto r = replaceInBook(**store, query, *replacement);
        if (!r) return fail(exitFor(r.status()), r.status().message());
        done = *r;
    }
    std::set<int64_t> pagesHit;
    for (const auto& h : *hits) pagesHit.insert(h.pageId);
    if (args.has("json")) {
        QJsonArray list;
        for (const auto& h : *hits)
            list.append(QJsonObject{{"page", h.sequence}, {"line", h.line}, {"start", h.start}, {"length", h.length},
                                    {"context", QString::fromStdString(h.context)}});
        QJsonObject o{{"hits", list}, {"pages", int(pagesHit.size())}};
        if (done) o["replaced"] = QJsonObject{{"hits", done->hits}, {"pages", done->pages}};
        printJson(o);
        return kOk;
    }
    for (const auto& h : *hits) std::cout << "p. " << h.sequence << ", line " << h.line << ": " << h.context << "\n";
    std::cout << hits->size() << (hits->size() == 1 ? " hit" : " hits") << " on " << pagesHit.size()
              << (pagesHit.size() == 1 ? " page" : " pages") << "\n";
    if (done) std::cout << "replaced " << done->hits << " on " << done->pages << (done->pages == 1 ? " page" : " pages")
                        << " (each page's replacement is a correction; the page's earlier text stays in its history)\n";
    return kOk;
}

}  // namespace quire::cli
