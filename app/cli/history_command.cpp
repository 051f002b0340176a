// quire-cli history: a page's versions, what changed since one of them, and going back to one.
#include "history_command.h"

#include <QJsonArray>
#include <QJsonObject>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <optional>

#include "command_support.h"
#include "quire/store/page_history.h"
#include "quire/text/word_diff.h"

namespace quire::cli {

int historyCommand(const Args& args) {
    auto number = [&](const char* key) -> std::optional<int> {
        if (!args.value(key)) return std::nullopt;
        try {
            size_t used = 0;
            const int n = std::stoi(*args.value(key), &used);
            if (used == args.value(key)->size() && n >= 0) return n;
        } catch (const std::exception&) {
        }
        return -1;
    };
    const auto page = number("page"), diff = number("diff"), revert = number("revert");
    if (!page || *page < 1) return fail(kUsage, "history needs --page N (the page's number in the book, from 1)");
    if ((diff && *diff < 0) || (revert && *revert < 0)) return fail(kUsage, "--diff and --revert take a version number");
    auto store = openProject(args, revert ? ProjectStore::Mode::OpenExisting : ProjectStore::Mode::ReadOnly);
    if (!store) return fail(exitFor(store.status()), store.status().message());
    auto pages = (*store)->pages();
    if (!pages) return fail(kInternal, pages.status().message());
    if (*page > int(pages->size())) return fail(kUsage, "--page must be between 1 and " + std::to_string(pages->size()));
    const int64_t pageId = (*pages)[size_t(*page - 1)].id;
    if (revert) {
        auto id = revertPage(**store, pageId, *revert);
        if (!id) return fail(exitFor(id.status()), id.status().message());
        spdlog::info("page {}: version {} is the current text again (correction {})", *page, *revert, *id);
    }
    auto versions = pageVersions(**store, pageId);
    if (!versions) return fail(kInternal, versions.status().message());
    if (diff && *diff >= int(versions->size()))
        return fail(kUsage, "the page has versions 0 to " + std::to_string(versions->size() - 1));
    if (args.has("json")) {
        QJsonArray list;
        for (const auto& v : *versions)
            list.append(QJsonObject{{"version", v.number}, {"label", QString::fromStdString(v.label)},
                                    {"createdAt", QString::fromStdString(v.createdAt)}, {"text", QString::fromStdString(v.text)},
                                    {"current", v.current}});
        printJson({{"page", *page}, {"versions", list}});
        return kOk;
    }
    if (diff) {
        // Removed words in [-…-], added in {+…+} (as wdiff and git diff --word-diff write them).
        const auto current = std::find_if(versions->begin(), versions->end(), [](const PageVersion& v) { return v.current; });
        for (const auto& p : wordDiff((*versions)[size_t(*diff)].text, current->text))
            std::cout << (p.kind == DiffPiece::Removed ? "[-" + p.text + "-]" : p.kind == DiffPiece::Added ? "{+" + p.text + "+}" : p.text);
        std::cout << "\n";
        return kOk;
    }
    for (const auto& v : *versions) {
        std::cout << v.number << ": " << v.label << (v.createdAt.empty() ? "" : ", " + v.createdAt)
                  << (v.current ? " (current)" : "") << "\n";
    }
    return kOk;
}

}  // namespace quire::cli
