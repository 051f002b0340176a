// The typed settings facade over QSettings: every key and its default.
#include "settings.h"

#include <QDir>
#include <QFileInfo>

namespace quire::ui {

Settings::Settings() : m_s(QStringLiteral("Quire"), QStringLiteral("Quire")) {}

QString Settings::engine() const { return m_s.value("recognition/engine", "auto").toString(); }
void Settings::setEngine(const QString& v) { m_s.setValue("recognition/engine", v); }
QString Settings::readerModel() const { return m_s.value("recognition/readerModel").toString(); }
void Settings::setReaderModel(const QString& v) { m_s.setValue("recognition/readerModel", v); }
QString Settings::languages() const { return m_s.value("recognition/languages", "eng").toString(); }
void Settings::setLanguages(const QString& v) { m_s.setValue("recognition/languages", v); }
int Settings::threads() const { return m_s.value("recognition/threads", 0).toInt(); }
void Settings::setThreads(int v) { m_s.setValue("recognition/threads", v); }
QString Settings::device() const { return m_s.value("recognition/device", "cpu").toString(); }
void Settings::setDevice(const QString& v) { m_s.setValue("recognition/device", v); }
double Settings::flagBelow() const { return m_s.value("recognition/flagBelow", 80.0).toDouble(); }
void Settings::setFlagBelow(double v) { m_s.setValue("recognition/flagBelow", v); }
bool Settings::deskew() const { return m_s.value("preprocess/deskew", true).toBool(); }
void Settings::setDeskew(bool v) { m_s.setValue("preprocess/deskew", v); }
bool Settings::normalizeBackground() const { return m_s.value("preprocess/normalize", true).toBool(); }
void Settings::setNormalizeBackground(bool v) { m_s.setValue("preprocess/normalize", v); }
bool Settings::binarize() const { return m_s.value("preprocess/binarize", false).toBool(); }
void Settings::setBinarize(bool v) { m_s.setValue("preprocess/binarize", v); }
bool Settings::splitSpreads() const { return m_s.value("preprocess/split", false).toBool(); }
void Settings::setSplitSpreads(bool v) { m_s.setValue("preprocess/split", v); }
int Settings::pdfDpi() const { return m_s.value("preprocess/pdfDpi", 300).toInt(); }
void Settings::setPdfDpi(int v) { m_s.setValue("preprocess/pdfDpi", v); }

QString Settings::theme() const { return m_s.value("ui/theme", "system").toString(); }
void Settings::setTheme(const QString& v) { m_s.setValue("ui/theme", v); }
QString Settings::uiLanguage() const { return m_s.value("ui/language", "system").toString(); }
void Settings::setUiLanguage(const QString& v) { m_s.setValue("ui/language", v); }

QStringList Settings::recentProjects() const {
    QStringList out;
    for (const QString& p : m_s.value("files/recent").toStringList())
        if (QFileInfo::exists(p)) out << p;
    return out;
}
void Settings::addRecentProject(const QString& path) {
    QStringList list = recentProjects();
    const QString abs = QFileInfo(path).absoluteFilePath();
    list.removeAll(abs);
    list.prepend(abs);
    while (list.size() > kMaxRecent) list.removeLast();
    m_s.setValue("files/recent", list);
}
QString Settings::lastOpenDir() const { return m_s.value("files/lastOpenDir", QDir::homePath()).toString(); }
void Settings::setLastOpenDir(const QString& v) { m_s.setValue("files/lastOpenDir", v); }
QStringList Settings::exportFormats() const {
    return m_s.value("export/formats", QStringList{"docx", "md"}).toStringList();
}
void Settings::setExportFormats(const QStringList& v) { m_s.setValue("export/formats", v); }
bool Settings::exportPageMarkers() const { return m_s.value("export/pageMarkers", false).toBool(); }
void Settings::setExportPageMarkers(bool v) { m_s.setValue("export/pageMarkers", v); }
bool Settings::exportPdfA() const { return m_s.value("export/pdfA", false).toBool(); }
void Settings::setExportPdfA(bool v) { m_s.setValue("export/pdfA", v); }

QByteArray Settings::windowGeometry() const { return m_s.value("window/geometry").toByteArray(); }
void Settings::setWindowGeometry(const QByteArray& v) { m_s.setValue("window/geometry", v); }
QByteArray Settings::windowState() const { return m_s.value("window/state").toByteArray(); }
void Settings::setWindowState(const QByteArray& v) { m_s.setValue("window/state", v); }

}  // namespace quire::ui
