// What quire-cli's commands share.
#include "command_support.h"

#include <QJsonDocument>

#include <spdlog/spdlog.h>

#include <iostream>
#include <sstream>

namespace quire::cli {

int fail(int code, const std::string& message) {
    spdlog::error("{}", message);
    return code;
}

int exitFor(const Status& s) { return isInputError(s.code()) || s.code() == ErrorCode::Io ? kUsage : kInternal; }

void printJson(const QJsonObject& o) {
    std::cout << QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString() << std::endl;
}

Result<std::unique_ptr<ProjectStore>> openProject(const Args& args, ProjectStore::Mode mode) {
    auto path = args.value("project");
    if (!path) return Status(ErrorCode::InvalidArgument, "--project P.quire is required");
    return ProjectStore::open(*path, mode);
}

std::optional<std::pair<int, int>> pageRange(const std::string& s) {
    const size_t dash = s.find('-');
    try {
        size_t used = 0;
        const int a = std::stoi(s.substr(0, dash), &used);
        if (used != (dash == std::string::npos ? s.size() : dash) || a < 1) return std::nullopt;
        if (dash == std::string::npos) return std::pair{a, a};
        const std::string rest = s.substr(dash + 1);
        const int b = std::stoi(rest, &used);
        if (used != rest.size() || b < a) return std::nullopt;
        return std::pair{a, b};
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::optional<std::vector<int>> pageNumbers(const std::string& list) {
    std::vector<int> out;
    std::stringstream ss(list);
    for (std::string item; std::getline(ss, item, ',');) {
        const auto range = pageRange(item);
        if (!range || range->second - range->first > 100000) return std::nullopt;
        for (int n = range->first; n <= range->second; ++n) out.push_back(n);
    }
    if (out.empty()) return std::nullopt;
    return out;
}

Result<std::optional<std::pair<int, int>>> pageRangeOption(const Args& args, const std::string& option) {
    const auto value = args.value(option);
    if (!value) return std::optional<std::pair<int, int>>();
    const auto range = pageRange(*value);
    if (!range)
        return Status(ErrorCode::InvalidArgument,
                      "--" + option + " takes a page or a range of the book's pages, e.g. 3-17, not '" + *value + "'");
    return std::optional<std::pair<int, int>>(*range);
}

Result<std::vector<int64_t>> idsOfPages(const std::vector<PageRecord>& book, const std::vector<int>& numbers) {
    std::vector<int64_t> ids;
    for (const int n : numbers) {
        if (n < 1 || n > int(book.size()))
            return Status(ErrorCode::InvalidArgument,
                          "page " + std::to_string(n) + ": the book has " + std::to_string(book.size()) + " pages");
        ids.push_back(book[size_t(n - 1)].id);
    }
    return ids;
}

}  // namespace quire::cli
