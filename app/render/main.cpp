// quire-render FILE: the PDF helper that quire-cli and quire start for each PDF (the protocol is in
// engine/src/source/pdf_render_service.cpp). Not meant to be run by hand.
#include <QCoreApplication>

#include <cstdio>

#include "quire/source/pdf_render_service.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: quire-render FILE (started by quire-cli and quire; talks on stdin and stdout)\n");
        return 2;
    }
    QCoreApplication app(argc, argv);
    return quire::servePdfRendering(argv[1]);
}
