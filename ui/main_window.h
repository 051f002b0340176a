// The archivist's window: page browser, scan and editor side by side, live transcription with
// progress, log and engine panels, export and settings.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QImage>
#include <QMainWindow>
#include <QThread>
#include <QTimer>

#include <memory>

#include "quire/store/project_properties.h"
#include "quire/store/project_store.h"
#include "transcription_worker.h"

class QComboBox;
class QDockWidget;
class QLabel;
class QListView;
class QPlainTextEdit;
class QProgressBar;
class QAction;
class QMenu;

namespace quire::ui {

class FindPanel;
class PageArranger;
class RegionTools;
class PageListModel;
class PageFilterProxy;
class PageView;
class PageEditor;
class RunChart;
class Settings;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // The programmatic surface used by menus, drag and drop, the command line and the tests.
    bool newProject(const QStringList& inputs, const QString& projectPath, bool start = true);
    bool openProject(const QString& path);
    void closeProject();
    void startRun();  // with the settings' engine and languages
    // The chosen pages read again (Pages > Read Again…): asks the engine, the languages and, where
    // pages have corrections, whether those stay their text; then runs.
    void rereadChosenPages();
    // `region` >= 0: only that hand-drawn region of the (one) page is read again.
    void rereadPages(const std::vector<int64_t>& pageIds, int region = -1);
    void setPaused(bool paused);
    void cancelRun();
    bool isRunning() const { return m_running; }
    bool exportBook(const QString& dir, const QStringList& formats, bool pageMarkers = false, bool pdfA = false);
    bool setProperties(const ProjectProperties& properties);  // title, author, language of the book
    bool revertCurrentPage(int version);  // a version from Page History (pageVersions) made current again

    void goToRow(int row);  // row of the page list (unfiltered)
    bool nextFlagged();
    bool previousFlagged();
    // F7: the next word the engine was unsure of or no dictionary knows, on this page or the next
    // that has one (round the book); false when there is none.
    bool nextDoubtfulWord();
    void markProofread();
    void changePageQueue(bool retry);  // the current page: retry a failed one, or skip a queued one

    QString projectPath() const;
    int currentRow() const { return m_currentRow; }
    PageEditor* editor() const { return m_editor; }
    FindPanel* findPanel() const { return m_find; }
    PageArranger* arranger() const { return m_arranger; }
    void showFind();
    PageView* pageView() const { return m_view; }
    PageListModel* pageModel() const { return m_model; }
    QListView* pageList() const { return m_list; }
    QString lastError() const { return m_lastError; }
    int longestStallMs() const { return m_longestStallMs; }
    bool resumeOffered() const { return m_resumeOffered; }
    bool pageImageShown() const { return m_imageShownFor == m_currentPageId && m_currentPageId >= 0; }
    ProjectStore* store() const { return m_store.get(); }

signals:
    void runFinished(bool ok);
    void correctionSaved(qint64 pageId);
    void pageShown(int row);

protected:
    void closeEvent(QCloseEvent* e) override;
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;

private:
    void buildActions();
    void buildLayout();
    void updateTitle();
    void updateActions();
    void reloadPages();
    void showRow(int row);
    void loadEditor(qint64 pageId);
    // After pages were turned, removed, moved or added: the list reloaded, the pages the change was
    // about chosen (else the current page kept), and the change said in the log.
    void onPagesArranged(const QString& summary, const std::vector<int64_t>& chosen);
    std::vector<int64_t> chosenPages() const;  // the list's selected pages, in book order
    void updateFlagNote();  // the reason the current page is flagged, above the editor  // the page's effective text and words into the editor
    void showError(const QString& message);
    void log(const QString& message, bool warning = false);
    void saveUiState();
    void restoreUiState();
    void rebuildRecentMenu();
    TranscribeParams paramsFromSettings() const;
    void runWith(const TranscribeParams& params);
    void onPageFinished(qint64 pageId, int sequence, const QString& status, bool flagged);
    void onProgress(const RunSample& s);
    void onRunFinished(bool ok, bool cancelled, const QString& message);
    void chooseNewProject();
    void chooseNewProjectFromFolder();
    void chooseOpenProject();
    void showExportDialog();
    void showPropertiesDialog();
    void showPageHistory();
    // The languages the project was last transcribed in, else the settings'.
    QString projectLanguages() const;
    void showSettingsDialog();

    std::unique_ptr<Settings> m_settings;
    std::unique_ptr<ProjectStore> m_store;
    PageListModel* m_model = nullptr;
    PageFilterProxy* m_proxy = nullptr;
    QListView* m_list = nullptr;
    QComboBox* m_filter = nullptr;
    PageView* m_view = nullptr;
    PageEditor* m_editor = nullptr;
    FindPanel* m_find = nullptr;
    PageArranger* m_arranger = nullptr;
    RegionTools* m_regionTools = nullptr;
    QLabel* m_flagNote = nullptr;
    QDockWidget* m_findDock = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QDockWidget *m_logDock = nullptr, *m_engineDock = nullptr;
    RunChart* m_chart = nullptr;
    QLabel* m_stallLabel = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_progressLabel = nullptr;
    QMenu* m_recentMenu = nullptr;
    QAction* m_propertiesAct = nullptr;
    QAction* m_historyAct = nullptr;
    QAction* m_rereadAct = nullptr;
    QAction *m_startAct = nullptr, *m_pauseAct = nullptr, *m_cancelAct = nullptr, *m_exportAct = nullptr,
            *m_proofAct = nullptr;

    QThread m_thread;
    TranscriptionWorker* m_worker = nullptr;
    bool m_running = false;
    bool m_restoreAsked = false;  // a restore is offered once per open
    QAction* m_retryAct = nullptr;
    QAction* m_skipAct = nullptr;
    int m_currentRow = -1;
    qint64 m_currentPageId = -1;
    qint64 m_imageShownFor = -1;
    QFutureWatcher<QImage> m_imageWatcher;
    QString m_lastError;
    bool m_resumeOffered = false;

    QTimer m_stallTimer;
    QElapsedTimer m_stallClock;
    int m_longestStallMs = 0;
};

}  // namespace quire::ui
