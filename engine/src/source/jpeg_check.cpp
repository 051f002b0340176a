// jpegDamage: libjpeg with its messages captured instead of printed, decoding at 1/8 scale (every
// entropy-coded byte is still read, so a cut or corrupt stream shows).
#include "jpeg_check.h"

#include <csetjmp>
#include <cstdio>
#include <memory>
#include <vector>

#include <jpeglib.h>

namespace quire {

namespace {

struct ErrorManager {
    jpeg_error_mgr base;
    std::jmp_buf jump;
    std::string first;
};

void keepMessage(j_common_ptr info, int level) {
    auto* em = reinterpret_cast<ErrorManager*>(info->err);
    if (level >= 0 || !em->first.empty()) return;  // level -1: a warning (corrupt data)
    char buf[JMSG_LENGTH_MAX];
    info->err->format_message(info, buf);
    em->first = buf;
}

[[noreturn]] void stop(j_common_ptr info) {
    auto* em = reinterpret_cast<ErrorManager*>(info->err);
    char buf[JMSG_LENGTH_MAX];
    info->err->format_message(info, buf);
    if (em->first.empty()) em->first = buf;
    std::longjmp(em->jump, 1);
}

struct FileCloser {
    void operator()(FILE* f) const { std::fclose(f); }
};

}  // namespace

std::string jpegDamage(const std::filesystem::path& path) {
    std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
    if (!file) return "cannot open the file";
    jpeg_decompress_struct info{};
    ErrorManager em{};
    info.err = jpeg_std_error(&em.base);
    em.base.emit_message = keepMessage;
    em.base.error_exit = stop;
    std::vector<unsigned char> row;
    if (setjmp(em.jump) == 0) {
        jpeg_create_decompress(&info);
        jpeg_stdio_src(&info, file.get());
        jpeg_read_header(&info, TRUE);
        info.scale_num = 1;
        info.scale_denom = 8;
        info.dct_method = JDCT_IFAST;
        jpeg_start_decompress(&info);
        row.resize(size_t(info.output_width) * size_t(info.output_components));
        while (info.output_scanline < info.output_height) {
            JSAMPROW rows[1] = {row.data()};
            jpeg_read_scanlines(&info, rows, 1);
        }
        jpeg_finish_decompress(&info);
    }
    jpeg_destroy_decompress(&info);
    return em.first;
}

}  // namespace quire
