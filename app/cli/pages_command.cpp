// quire-cli pages: one action per call; page numbers are the book's, as status --pages lists them.
#include "pages_command.h"

#include <QJsonArray>
#include <QJsonObject>

#include <spdlog/spdlog.h>

#include <iostream>

#include "command_support.h"
#include "quire/store/page_arrangement.h"

namespace quire::cli {

namespace {

// The ids of the pages numbered in `list` ("3,17,20-25"), or a message saying what is wrong.
Result<std::vector<int64_t>> chosenPages(const std::vector<PageRecord>& pages, const std::string& option,
                                         const std::string& list) {
    const auto numbers = pageNumbers(list);
    if (!numbers)
        return Status(ErrorCode::InvalidArgument,
                      "--" + option + " takes page numbers and ranges separated by commas, e.g. 3,17,20-25, not '" + list + "'");
    return idsOfPages(pages, *numbers);
}

int retryOrSkip(ProjectStore& store, const std::vector<PageRecord>& pages, bool retry, const std::string& list) {
    auto ids = chosenPages(pages, retry ? "retry" : "skip", list);
    if (!ids) return fail(kUsage, ids.status().message());
    for (const int64_t id : *ids) {
        auto p = store.page(id);
        if (!p) return fail(kInternal, p.status().message());
        if (Status s = retry ? store.retryPage(id) : store.skipPage(id); !s)
            return fail(s.code() == ErrorCode::InvalidArgument ? kUsage : kInternal, s.message());
        spdlog::info("page {}: {}", p->sequence, retry ? "queued again; the next transcribe run reads it" : "skipped; runs leave it alone");
    }
    return kOk;
}

// --removed: the pages out of the book, numbered for --restore, with what they came from.
int listRemoved(ProjectStore& store, bool json) {
    auto removed = removedPages(store);
    if (!removed) return fail(kInternal, removed.status().message());
    QJsonArray list;
    for (size_t i = 0; i < removed->size(); ++i) {
        const PageRecord& pg = (*removed)[i];
        list.append(QJsonObject{{"removed", int(i + 1)}, {"id", qint64(pg.id)},
                                {"file", QString::fromStdString(pg.sourceFile)}, {"filePage", pg.filePage + 1},
                                {"part", pg.part}});
        if (!json) std::cout << "removed " << i + 1 << ": " << pg.sourceFile << " p." << pg.filePage + 1 << "\n";
    }
    if (json) printJson(QJsonObject{{"removedPages", list}});
    else if (removed->empty()) std::cout << "no page is removed from the book\n";
    return kOk;
}

// --restore R: the removed pages numbered as --removed lists them, put back.
int restore(ProjectStore& store, const std::string& list) {
    auto removed = removedPages(store);
    if (!removed) return fail(kInternal, removed.status().message());
    const auto numbers = pageNumbers(list);
    if (!numbers)
        return fail(kUsage, "--restore takes the numbers pages --removed lists, e.g. 1,3, not '" + list + "'");
    std::vector<int64_t> ids;
    for (const int n : *numbers) {
        if (n < 1 || n > int(removed->size()))
            return fail(kUsage, removed->empty() ? std::string("no page is removed from the book")
                                                 : "pages --removed lists removed pages 1 to " +
                                                       std::to_string(removed->size()) + ", not " + std::to_string(n));
        ids.push_back((*removed)[size_t(n - 1)].id);
    }
    auto edit = restorePages(store, ids);
    if (!edit) return fail(edit.status().code() == ErrorCode::InvalidArgument ? kUsage : kInternal, edit.status().message());
    spdlog::info("{}; quire-cli pages --undo removes it again", edit->summary);
    return kOk;
}

}  // namespace

int pagesCommand(const Args& args) {
    static const char* kActions[] = {"retry", "skip", "delete", "move", "rotate", "undo", "removed", "restore"};
    int actions = 0;
    for (const char* a : kActions) actions += args.has(a);
    if (actions != 1)
        return fail(kUsage, "pages needs one of --retry, --skip, --delete, --move (with --before K), --rotate, --undo, "
                            "--removed or --restore");
    if (args.has("json") && !args.has("removed")) return fail(kUsage, "--json goes with --removed");
    if (args.has("before") != args.has("move")) return fail(kUsage, "--move N[,M...] goes with --before K (and only with it)");
    if (args.has("by") && !args.has("rotate")) return fail(kUsage, "--by goes with --rotate");
    int degrees = 90, before = 0;
    try {
        degrees = std::stoi(args.value("by", "90"));
        before = std::stoi(args.value("before", "0"));
    } catch (const std::exception&) {
        return fail(kUsage, "--by takes 90, 180 or 270 and --before a page number");
    }
    auto store = openProject(args, ProjectStore::Mode::OpenExisting);
    if (!store) return fail(exitFor(store.status()), store.status().message());
    ProjectStore& project = **store;
    auto pages = project.pages();
    if (!pages) return fail(kInternal, pages.status().message());
    if (auto v = args.value("retry")) return retryOrSkip(project, *pages, true, *v);
    if (auto v = args.value("skip")) return retryOrSkip(project, *pages, false, *v);
    if (args.has("removed")) return listRemoved(project, args.has("json"));
    if (auto v = args.value("restore")) return restore(project, *v);
    if (args.has("undo")) {
        auto undone = undoArrangement(project);
        if (!undone) return fail(kInternal, undone.status().message());
        if (!*undone) return fail(kUsage, "nothing to undo: the pages were not removed, moved, turned or put back");
        spdlog::info("undone: {} ({})", (*undone)->summary, (*undone)->createdAt);
        return kOk;
    }
    const std::string option = args.has("delete") ? "delete" : args.has("move") ? "move" : "rotate";
    auto ids = chosenPages(*pages, option, *args.value(option));
    if (!ids) return fail(kUsage, ids.status().message());
    auto edit = option == "delete" ? removePages(project, *ids)
                : option == "move" ? movePages(project, *ids, before)
                                   : rotatePages(project, *ids, degrees);
    if (!edit) return fail(edit.status().code() == ErrorCode::InvalidArgument ? kUsage : kInternal, edit.status().message());
    spdlog::info("{}{}", edit->summary,
                 option == "rotate" ? "; queued to be read again (the next transcribe run reads them)" : "");
    if (edit->id != 0) spdlog::info("quire-cli pages --undo puts it back");
    return kOk;
}

}  // namespace quire::cli
