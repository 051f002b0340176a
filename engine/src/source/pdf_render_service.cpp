// The quire-render helper: one PdfDocument served over standard input and output.
//
// Wire format (the client is PdfSource in pdf_source.cpp). Every reply is a header line of words,
// then the byte fields whose lengths it gives.
//   at start:          "ok PAGES NOTELEN" NOTE, then per page "WIDTHPT HEIGHTPT IMAGES REFUSALLEN" REFUSAL
//                  or  "error CODE LEN" MESSAGE, and the helper exits
//   "render I W H DPI" -> "image W H CHANNELS DOUBTLEN NOTELEN" DOUBT NOTE PIXELS   or "error CODE LEN" MESSAGE
//   "text I"           -> "text LEN" TEXT   or "none"
#include "quire/source/pdf_render_service.h"

#include <cstdio>
#include <iostream>
#include <new>
#include <sstream>

#include "pdf_document.h"

namespace quire {

namespace {

void put(const std::string& bytes) { std::fwrite(bytes.data(), 1, bytes.size(), stdout); }

void putError(const Status& s) {
    put(std::string("error ") + errorCodeName(s.code()) + " " + std::to_string(s.message().size()) + "\n" + s.message());
    std::fflush(stdout);
}

int serve(const std::string& file) {
    auto opened = PdfDocument::open(file);
    if (!opened) {
        putError(opened.status());
        return 0;
    }
    PdfDocument& doc = **opened;
    put("ok " + std::to_string(doc.pageCount()) + " " + std::to_string(doc.repairNote().size()) + "\n" + doc.repairNote());
    for (int i = 0; i < doc.pageCount(); ++i) {
        const PdfPageInfo& p = doc.page(i);
        char line[128];
        std::snprintf(line, sizeof line, "%.4f %.4f %d %zu\n", p.widthPt, p.heightPt, p.drawsImages ? 1 : 0, p.refusal.size());
        put(line + p.refusal);
    }
    std::fflush(stdout);
    std::string command;
    while (std::getline(std::cin, command)) {
        std::istringstream words(command);
        std::string verb;
        int index = -1, w = 0, h = 0, dpi = 0;
        words >> verb >> index;
        if (verb == "render" && (words >> w >> h >> dpi) && w > 0 && h > 0) {
            auto page = doc.render(index, w, h, dpi, nullptr);
            if (!page) {
                putError(page.status());
                continue;
            }
            const cv::Mat& m = page->image;
            put("image " + std::to_string(m.cols) + " " + std::to_string(m.rows) + " " + std::to_string(m.channels()) + " " +
                std::to_string(page->doubt.size()) + " " + std::to_string(page->note.size()) + "\n" + page->doubt + page->note);
            for (int y = 0; y < m.rows; ++y) std::fwrite(m.ptr(y), 1, size_t(m.cols) * size_t(m.channels()), stdout);
            std::fflush(stdout);
        } else if (verb == "text") {
            const auto text = doc.textLayer(index);
            put(text ? "text " + std::to_string(text->size()) + "\n" + *text : std::string("none\n"));
            std::fflush(stdout);
        } else {
            putError(Status(ErrorCode::InvalidArgument, "quire-render: unknown request '" + command + "'"));
        }
    }
    return 0;
}

}  // namespace

int servePdfRendering(const std::string& file) {
    try {
        return serve(file);
    } catch (const std::bad_alloc&) {
        putError(Status(ErrorCode::TooLarge, file + ": the PDF renderer ran out of memory"));
        return 3;
    } catch (const std::exception& e) {
        putError(Status(ErrorCode::Corrupt, file + ": the PDF renderer failed: " + e.what()));
        return 3;
    }
}

}  // namespace quire
