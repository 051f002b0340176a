// quire-cli regions --project P --page N [--set "X,Y,W,H:kind;…" | --clear] [--json]
#include "regions_command.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <spdlog/spdlog.h>

#include <iostream>

#include "command_support.h"
#include "quire/store/page_regions.h"

namespace quire::cli {

namespace {

// "X,Y,W,H[:kind]" separated by ';' (kind text when left out), in reading order.
Result<std::vector<PageRegion>> parseRegions(const std::string& spec) {
    std::vector<PageRegion> out;
    const QStringList items = QString::fromStdString(spec).split(';', Qt::SkipEmptyParts);
    for (int i = 0; i < items.size(); ++i) {
        const QString item = items[i].trimmed();
        const QStringList parts = item.split(':');
        const QStringList n = parts[0].split(',');
        auto bad = [&](const std::string& why) {
            return Status(ErrorCode::InvalidArgument, "--set: region " + std::to_string(i + 1) + " '" + item.toStdString() +
                                                          "': " + why);
        };
        if (parts.size() > 2 || n.size() != 4) return bad("write it X,Y,W,H or X,Y,W,H:kind, in the page's pixels");
        int v[4];
        for (int k = 0; k < 4; ++k) {
            bool ok = false;
            v[k] = n[k].trimmed().toInt(&ok);
            if (!ok) return bad("'" + n[k].toStdString() + "' is not a whole number");
        }
        if (v[2] <= 0 || v[3] <= 0) return bad("its width and height must be above 0");
        PageRegion r;
        r.box = {v[0], v[1], v[2], v[3]};
        if (parts.size() == 2) {
            const auto kind = parseRegionKind(parts[1].trimmed().toStdString());
            if (!kind) return bad("the kinds are text, heading, marginal-note, table, image and ignore");
            r.kind = *kind;
        }
        out.push_back(r);
    }
    return out;
}

}  // namespace

int regionsCommand(const Args& args) {
    if (!args.has("page")) return fail(kUsage, "regions: --page N names the page");
    if (args.has("set") && args.has("clear")) return fail(kUsage, "regions: --set or --clear, not both");
    const bool changes = args.has("set") || args.has("clear");
    auto store = openProject(args, changes ? ProjectStore::Mode::OpenExisting : ProjectStore::Mode::ReadOnly);
    if (!store) return fail(exitFor(store.status()), store.status().message());
    auto pages = (*store)->pages();
    if (!pages) return fail(kInternal, pages.status().message());
    const auto number = pageNumbers(args.value("page", ""));
    if (!number || number->size() != 1) return fail(kUsage, "regions: --page takes one page number, not '" + args.value("page", "") + "'");
    auto ids = idsOfPages(*pages, *number);
    if (!ids) return fail(kUsage, ids.status().message());
    const int64_t id = ids->front();
    if (changes) {
        std::vector<PageRegion> regions;
        if (args.has("set")) {
            auto parsed = parseRegions(args.value("set", ""));
            if (!parsed) return fail(kUsage, parsed.status().message());
            regions = std::move(*parsed);
        }
        if (Status s = setPageRegions(**store, id, regions); !s) return fail(exitFor(s), "page " + args.value("page", "") + ": " + s.message());
        spdlog::info("page {}: {}", number->front(),
                     regions.empty() ? std::string("its regions are removed; the engine finds the layout again at the next read")
                                     : std::to_string(regions.size()) + " region(s); transcribe --reread " +
                                           std::to_string(number->front()) + " reads the page in them");
    }
    auto regions = pageRegions(**store, id);
    if (!regions) return fail(kInternal, regions.status().message());
    QJsonArray list;
    for (size_t i = 0; i < regions->size(); ++i) {
        const PageRegion& r = (*regions)[i];
        list.append(QJsonObject{{"order", int(i + 1)}, {"kind", QString(regionKindName(r.kind))},
                                {"box", QJsonArray{r.box.x, r.box.y, r.box.w, r.box.h}}});
        if (!args.has("json"))
            std::cout << i + 1 << ": " << regionKindName(r.kind) << " " << r.box.x << "," << r.box.y << "," << r.box.w << ","
                      << r.box.h << "\n";
    }
    if (args.has("json")) printJson(QJsonObject{{"page", number->front()}, {"regions", list}});
    else if (regions->empty()) std::cout << "page " << number->front() << " has no regions drawn: the engine finds its layout\n";
    return kOk;
}

}  // namespace quire::cli
