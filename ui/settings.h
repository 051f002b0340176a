// The one typed facade over QSettings: every key and its default live here; widgets never touch
// QSettings directly.
#pragma once

#include <QByteArray>
#include <QSettings>
#include <QString>
#include <QStringList>

namespace quire::ui {

class Settings {
public:
    Settings();

    QString engine() const;  // "auto", "tesseract", "ppocr" or "reader"
    void setEngine(const QString& v);
    QString readerModel() const;  // the reader's model folder; empty: the installed model
    void setReaderModel(const QString& v);
    QString languages() const;  // e.g. "eng" or "eng+chi_sim"
    void setLanguages(const QString& v);
    int threads() const;  // 0: one per core
    void setThreads(int v);
    QString device() const;  // "cpu" or "gpu" (used by the PP-OCR and reader engines)
    void setDevice(const QString& v);
    double flagBelow() const;  // mean word confidence under which a page is flagged
    void setFlagBelow(double v);
    bool deskew() const;
    void setDeskew(bool v);
    bool normalizeBackground() const;
    void setNormalizeBackground(bool v);
    bool binarize() const;
    void setBinarize(bool v);
    bool splitSpreads() const;
    void setSplitSpreads(bool v);
    int pdfDpi() const;
    void setPdfDpi(int v);

    QString theme() const;  // "system", "light", "dark"
    void setTheme(const QString& v);
    QString uiLanguage() const;  // "system", "en", "zh_CN"
    void setUiLanguage(const QString& v);

    QStringList recentProjects() const;  // newest first, missing files dropped
    void addRecentProject(const QString& path);
    QString lastOpenDir() const;
    void setLastOpenDir(const QString& v);
    QStringList exportFormats() const;
    void setExportFormats(const QStringList& v);
    bool exportPageMarkers() const;
    void setExportPageMarkers(bool v);
    bool exportPdfA() const;
    void setExportPdfA(bool v);

    QByteArray windowGeometry() const;
    void setWindowGeometry(const QByteArray& v);
    QByteArray windowState() const;
    void setWindowState(const QByteArray& v);

    static constexpr int kMaxRecent = 10;

private:
    mutable QSettings m_s;
};

}  // namespace quire::ui
