// The main window: page browser, scan and text side by side, the run's controls, panels and menus.
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDateTime>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListView>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSplitter>
#include <QStatusBar>
#include <QTextCursor>
#include <QToolBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "export_dialog.h"
#include "find_panel.h"
#include "page_arranger.h"
#include "page_history_dialog.h"
#include "properties_dialog.h"
#include "region_tools.h"
#include "page_editor.h"
#include "page_list_delegate.h"
#include "page_list_model.h"
#include "page_view.h"
#include "palette_colors.h"
#include "quire/export/book.h"
#include "quire/source/document_source.h"
#include "quire/store/project_backups.h"
#include "quire/export/exporters.h"
#include "quire/recognizers/recognizer.h"
#include "run_chart.h"
#include "settings.h"
#include "settings_dialog.h"

namespace quire::ui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), m_settings(std::make_unique<Settings>()) {
    setAcceptDrops(true);
    setObjectName("MainWindow");
    buildLayout();
    buildActions();
    m_worker = new TranscriptionWorker;
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(m_worker, &TranscriptionWorker::progress, this, &MainWindow::onProgress);
    connect(m_worker, &TranscriptionWorker::pageFinished, this, &MainWindow::onPageFinished);
    connect(m_worker, &TranscriptionWorker::pageStarted, this, [this](qint64 pageId) { m_model->setRunning(pageId); });
    connect(m_worker, &TranscriptionWorker::textStreamed, m_editor, &PageEditor::appendStreamed);
    connect(m_worker, &TranscriptionWorker::logMessage, this, &MainWindow::log);
    connect(m_worker, &TranscriptionWorker::finished, this, &MainWindow::onRunFinished);
    m_thread.start();

    // Event-loop stall monitor: a 10 ms timer that measures how late it fires.
    m_stallTimer.setInterval(10);
    connect(&m_stallTimer, &QTimer::timeout, this, [this] {
        const int late = int(m_stallClock.restart()) - 10;
        if (m_running && late > m_longestStallMs) {
            m_longestStallMs = late;
            m_stallLabel->setText(tr("Longest GUI stall during this run: %1 ms").arg(late));
        }
    });
    m_stallClock.start();
    m_stallTimer.start();

    connect(&m_imageWatcher, &QFutureWatcher<QImage>::finished, this, [this] {
        const PageRecord* p = m_model->page(m_currentRow);
        if (!p || p->id != m_currentPageId) return;
        const QImage img = m_imageWatcher.result();
        if (img.isNull()) {
            m_view->clearPage(tr("The scan of this page cannot be shown: %1").arg(QString::fromStdString(p->sourceFile)));
            return;
        }
        const QPoint origin = p->part > 0 ? QPoint(p->region.x, p->region.y) : QPoint();
        // A queued page's words belong to a reading about to be replaced (after a turn, they would
        // not even lie on the scan): the scan is shown without them until it is read.
        m_view->setPage(img, p->status == PageStatus::Queued ? PageText() : m_editor->alignedWords(), origin, 60.0f);
        m_imageShownFor = p->id;
        m_regionTools->loadShownPage(origin);
        emit pageShown(m_currentRow);
    });
    restoreGeometry(m_settings->windowGeometry());
    restoreState(m_settings->windowState());
    // The Log and Engine panels stay out of the way until there is something to say (log()), at the
    // size the user left them.
    m_logDock->hide();
    m_engineDock->hide();
    updateTitle();
    updateActions();
}

MainWindow::~MainWindow() {
    if (m_worker) m_worker->cancel();
    m_thread.quit();
    m_thread.wait();
}

void MainWindow::buildLayout() {
    m_model = new PageListModel(this);
    m_proxy = new PageFilterProxy(this);
    m_proxy->setSourceModel(m_model);
    m_list = new QListView;
    m_list->setObjectName("pageList");
    m_list->setModel(m_proxy);
    m_list->setItemDelegate(new PageListDelegate(m_list));
    m_list->setUniformItemSizes(true);
    // Several pages can be chosen (to turn, move or remove them together) and dragged to a new place.
    m_list->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_list->setDragDropMode(QAbstractItemView::InternalMove);
    m_list->setDropIndicatorShown(true);
    connect(m_list->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& idx) {
        if (idx.isValid()) showRow(m_proxy->mapToSource(idx).row());
    });
    m_filter = new QComboBox;
    m_filter->addItems({tr("All pages"), tr("Flagged"), tr("Failed"), tr("Not proofread")});
    connect(m_filter, &QComboBox::currentIndexChanged, this,
            [this](int i) { m_proxy->setFilter(PageFilterProxy::Filter(i)); });
    auto* browser = new QWidget;
    auto* bl = new QVBoxLayout(browser);
    bl->setContentsMargins(2, 2, 2, 2);
    bl->addWidget(m_filter);
    bl->addWidget(m_list);
    auto* browserDock = new QDockWidget(tr("Pages"), this);
    browserDock->setObjectName("pagesDock");
    browserDock->setWidget(browser);
    addDockWidget(Qt::LeftDockWidgetArea, browserDock);

    m_view = new PageView;
    m_editor = new PageEditor;
    m_editor->setObjectName("editor");
    // Above the editor: why the page is flagged, in the theme's warning tint.
    m_flagNote = new QLabel;
    m_flagNote->setObjectName("flagNote");
    m_flagNote->setWordWrap(true);
    m_flagNote->setAutoFillBackground(true);
    m_flagNote->setMargin(4);
    QPalette notePalette = m_flagNote->palette();
    notePalette.setColor(QPalette::Window, statusColor(notePalette, "flagged"));
    m_flagNote->setPalette(notePalette);
    m_flagNote->hide();
    auto* textSide = new QWidget;
    auto* textLayout = new QVBoxLayout(textSide);
    textLayout->setContentsMargins(0, 0, 0, 0);
    textLayout->setSpacing(0);
    textLayout->addWidget(m_flagNote);
    textLayout->addWidget(m_editor, 1);
    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(m_view);
    split->addWidget(textSide);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setSizes({640, 460});
    setCentralWidget(split);
    connect(m_view, &PageView::wordClicked, this, [this](int) {
        const int i = m_view->highlightedWord();
        int k = 0;
        for (const auto& l : m_editor->alignedWords().lines)
            for (const auto& w : l.words)
                if (k++ == i) m_editor->selectWordWithBox(w.box);
    });
    connect(m_editor, &PageEditor::wordActivated, this, [this](const quire::Box& box) {
        int k = 0;
        for (const auto& l : m_editor->alignedWords().lines)
            for (const auto& w : l.words) {
                if (w.box.x == box.x && w.box.y == box.y && w.box.w == box.w && w.box.h == box.h) {
                    m_view->highlightWord(k);
                    return;
                }
                ++k;
            }
    });
    connect(m_editor, &PageEditor::correctionReady, this, [this](qint64 pageId, const QString& text) {
        if (!m_store) return;
        auto id = m_store->addCorrection(pageId, text.toStdString());
        if (!id) {
            showError(tr("Your correction could not be saved: %1").arg(QString::fromStdString(id.status().message())));
            return;
        }
        if (auto rec = m_store->page(pageId)) m_model->updatePage(*rec);
        emit correctionSaved(pageId);
    });

    m_find = new FindPanel;
    m_find->setObjectName("findPanel");
    m_findDock = new QDockWidget(tr("Find and Replace"), this);
    m_findDock->setObjectName("findDock");
    m_findDock->setWidget(m_find);
    addDockWidget(Qt::RightDockWidgetArea, m_findDock);
    m_findDock->hide();
    connect(m_find, &FindPanel::aboutToSearch, m_editor, &PageEditor::flush);
    connect(m_find, &FindPanel::hitActivated, this, [this](const SearchHit& hit) {
        goToRow(m_model->rowOf(hit.pageId));
        if (m_currentPageId != hit.pageId) return;
        QTextCursor c(m_editor->document());
        c.setPosition(hit.start);
        c.setPosition(hit.start + hit.length, QTextCursor::KeepAnchor);
        m_editor->setTextCursor(c);
        m_editor->ensureCursorVisible();
    });
    connect(m_find, &FindPanel::replaceInEditor, this, [this](const SearchHit& hit, const QString& text, bool* done) {
        // Through the editor, so the replacement is one more edit: undoable there and saved as a correction.
        goToRow(m_model->rowOf(hit.pageId));
        if (m_currentPageId != hit.pageId || m_editor->isReadOnly()) return;
        QTextCursor c(m_editor->document());
        c.setPosition(hit.start);
        c.setPosition(hit.start + hit.length, QTextCursor::KeepAnchor);
        c.insertText(text);
        m_editor->setTextCursor(c);
        *done = true;
    });
    connect(m_find, &FindPanel::pagesChanged, this, [this](const std::vector<int64_t>& pageIds) {
        for (int64_t id : pageIds) {
            if (auto rec = m_store->page(id)) m_model->updatePage(*rec);
            if (id == m_currentPageId) loadEditor(id);
        }
    });

    connect(m_editor, &PageEditor::wordAddedToDictionary, this, [this](const QString& word) {
        if (!m_store) return;
        if (Status s = m_store->addProjectWord(word.toStdString()); !s)
            showError(tr("The word could not be added to the project's dictionary: %1").arg(QString::fromStdString(s.message())));
        else log(tr("“%1” added to the project's dictionary").arg(word));
    });

    m_log = new QPlainTextEdit;
    m_log->setReadOnly(true);
    m_log->setObjectName("log");
    auto* logDock = m_logDock = new QDockWidget(tr("Log"), this);
    logDock->setObjectName("logDock");
    logDock->setWidget(m_log);
    addDockWidget(Qt::BottomDockWidgetArea, logDock);

    m_chart = new RunChart;
    m_stallLabel = new QLabel(tr("Longest GUI stall during this run: -"));
    auto* engine = new QWidget;
    auto* el = new QVBoxLayout(engine);
    el->addWidget(m_chart);
    el->addWidget(m_stallLabel);
    auto* engineDock = m_engineDock = new QDockWidget(tr("Engine"), this);
    engineDock->setObjectName("engineDock");
    engineDock->setWidget(engine);
    addDockWidget(Qt::BottomDockWidgetArea, engineDock);
    tabifyDockWidget(logDock, engineDock);
    logDock->raise();
    resizeDocks({logDock}, {150}, Qt::Vertical);
    resizeDocks({browserDock}, {240}, Qt::Horizontal);

    m_progress = new QProgressBar;
    m_progress->setMaximumWidth(260);
    m_progress->setTextVisible(true);
    m_progress->hide();  // shown while a run goes (updateActions)
    m_progressLabel = new QLabel;
    statusBar()->addPermanentWidget(m_progressLabel);
    statusBar()->addPermanentWidget(m_progress);
}

void MainWindow::buildActions() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* newAct = file->addAction(QIcon::fromTheme("document-new"), tr("&New Project from Files…"), this,
                                      &MainWindow::chooseNewProject);
    newAct->setShortcut(QKeySequence::New);
    file->addAction(QIcon::fromTheme("folder-new"), tr("New Project from &Folder…"), this,
                    &MainWindow::chooseNewProjectFromFolder);
    QAction* openAct = file->addAction(QIcon::fromTheme("document-open"), tr("&Open Project…"), this,
                                       &MainWindow::chooseOpenProject);
    openAct->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    file->addSeparator();
    m_exportAct = file->addAction(QIcon::fromTheme("document-export"), tr("&Export Book…"), this,
                                  &MainWindow::showExportDialog);
    m_exportAct->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    m_propertiesAct = file->addAction(QIcon::fromTheme("document-properties"), tr("Project &Properties…"), this,
                                      &MainWindow::showPropertiesDialog);
    m_propertiesAct->setObjectName("propertiesAction");
    file->addSeparator();
    QAction* quit = file->addAction(QIcon::fromTheme("application-exit"), tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* undo = edit->addAction(tr("&Undo"), m_editor, &QPlainTextEdit::undo);
    undo->setShortcut(QKeySequence::Undo);
    QAction* redo = edit->addAction(tr("&Redo"), m_editor, &QPlainTextEdit::redo);
    redo->setShortcut(QKeySequence::Redo);
    edit->addSeparator();
    QAction* findAct = edit->addAction(QIcon::fromTheme("edit-find-replace"), tr("&Find and Replace in Book…"), this,
                                       &MainWindow::showFind);
    findAct->setShortcuts({QKeySequence::Find, QKeySequence::Replace, QKeySequence(Qt::CTRL | Qt::Key_H)});
    m_historyAct = edit->addAction(tr("Page &History…"), this, &MainWindow::showPageHistory);
    m_historyAct->setObjectName("historyAction");
    m_historyAct->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_H));
    edit->addSeparator();
    m_proofAct = edit->addAction(tr("Mark Page &Proofread"), this, &MainWindow::markProofread);
    m_proofAct->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    QAction* nextF = edit->addAction(tr("&Next Flagged Page"), this, [this] { nextFlagged(); });
    nextF->setShortcut(QKeySequence(Qt::Key_F8));
    QAction* prevF = edit->addAction(tr("P&revious Flagged Page"), this, [this] { previousFlagged(); });
    prevF->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F8));
    QAction* nextDoubt = edit->addAction(tr("Next &Doubtful Word"), this, [this] {
        m_editor->setFocus();
        if (!nextDoubtfulWord()) statusBar()->showMessage(tr("No doubtful word in the book"), 3000);
    });
    nextDoubt->setShortcut(QKeySequence(Qt::Key_F7));
    QAction* nextP = edit->addAction(tr("Next Page"), this, [this] { goToRow(m_currentRow + 1); });
    nextP->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageDown));
    QAction* prevP = edit->addAction(tr("Previous Page"), this, [this] { goToRow(m_currentRow - 1); });
    prevP->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageUp));
    edit->addSeparator();
    // Ctrl+, as the README says, also where the desktop defines no Preferences key (outside KDE).
    QList<QKeySequence> settingsKeys = QKeySequence::keyBindings(QKeySequence::Preferences);
    if (!settingsKeys.contains(QKeySequence(Qt::CTRL | Qt::Key_Comma))) settingsKeys.append(QKeySequence(Qt::CTRL | Qt::Key_Comma));
    edit->addAction(QIcon::fromTheme("preferences-system"), tr("&Settings…"), this, &MainWindow::showSettingsDialog)
        ->setShortcuts(settingsKeys);

    QMenu* pagesMenu = menuBar()->addMenu(tr("&Pages"));
    m_arranger = new PageArranger(
        {[this] { return m_store.get(); }, [this] { return chosenPages(); },
         [this] {
             const PageRecord* p = m_model->page(m_currentRow);
             return p ? p->sequence : 0;
         },
         [this] { return m_running; }, [this] { return paramsFromSettings(); },
         [this](const QString& m) { showError(m); }, [this] { m_editor->flush(); }},
        this);
    m_arranger->addTo(pagesMenu, m_list);
    m_rereadAct = pagesMenu->addAction(tr("Read &Again…"), this, &MainWindow::rereadChosenPages);
    m_rereadAct->setObjectName("rereadAction");
    m_list->addAction(m_rereadAct);
    connect(m_arranger, &PageArranger::arranged, this, &MainWindow::onPagesArranged);

    QMenu* layoutMenu = menuBar()->addMenu(tr("&Layout"));
    m_regionTools = new RegionTools(
        {[this] { return m_store.get(); }, [this] { return pageImageShown() ? int64_t(m_imageShownFor) : int64_t(-1); },
         [this] {
             const PageRecord* p = m_model->page(m_currentRow);
             return p ? p->sequence : 0;
         },
         [this] { return m_running; }, [this](const std::vector<int64_t>& ids, int region) { rereadPages(ids, region); },
         [this](const QString& m) { showError(m); }, [this](const QString& m) { log(m); }},
        m_view, this);
    m_regionTools->addTo(layoutMenu);
    connect(m_arranger, &PageArranger::scansAdded, this, &MainWindow::startRun);
    connect(m_model, &PageListModel::pagesDropped, m_arranger, &PageArranger::move);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(tr("Fit &Width"), m_view, &PageView::fitWidth)->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_2));
    view->addAction(tr("Fit &Page"), m_view, &PageView::fitPage)->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_3));
    view->addAction(tr("&Actual Size"), m_view, &PageView::actualSize)->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
    view->addAction(tr("Zoom &In"), m_view, [this] { m_view->zoomBy(1.25); })->setShortcut(QKeySequence::ZoomIn);
    view->addAction(tr("Zoom &Out"), m_view, [this] { m_view->zoomBy(0.8); })->setShortcut(QKeySequence::ZoomOut);
    view->addSeparator();
    view->addAction(m_logDock->toggleViewAction());
    view->addAction(m_engineDock->toggleViewAction());

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    m_startAct = run->addAction(QIcon::fromTheme("media-playback-start"), tr("&Start / Resume"), this, &MainWindow::startRun);
    m_startAct->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_pauseAct = run->addAction(QIcon::fromTheme("media-playback-pause"), tr("&Pause"));
    m_pauseAct->setCheckable(true);
    connect(m_pauseAct, &QAction::toggled, this, &MainWindow::setPaused);
    m_cancelAct = run->addAction(QIcon::fromTheme("media-playback-stop"), tr("&Cancel"), this, &MainWindow::cancelRun);
    run->addSeparator();
    // A failed page (one quarantined after crashing the engine twice, too) queued again, or a
    // queued page left alone by runs; also in the page list's context menu.
    m_retryAct = run->addAction(tr("Read Failed Page &Again"), this, [this] { changePageQueue(true); });
    m_skipAct = run->addAction(tr("S&kip Queued Page"), this, [this] { changePageQueue(false); });
    m_retryAct->setObjectName("retryPageAction");
    m_skipAct->setObjectName("skipPageAction");
    m_list->setContextMenuPolicy(Qt::ActionsContextMenu);
    m_list->addAction(m_retryAct);
    m_list->addAction(m_skipAct);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Quire"), this, [this] {
        QMessageBox::about(this, tr("About Quire"),
                           tr("<b>Quire</b> %1<br>Scanned volumes to proofread, exportable text.").arg(QUIRE_VERSION_STRING));
    });

    QToolBar* tb = addToolBar(tr("Main"));
    tb->setObjectName("mainToolBar");
    tb->addAction(newAct);
    tb->addAction(openAct);
    tb->addSeparator();
    tb->addAction(m_startAct);
    tb->addAction(m_pauseAct);
    tb->addAction(m_cancelAct);
    tb->addSeparator();
    tb->addAction(m_proofAct);
    tb->addAction(m_exportAct);
}

void MainWindow::rebuildRecentMenu() {
    m_recentMenu->clear();
    for (const QString& p : m_settings->recentProjects())
        m_recentMenu->addAction(QFileInfo(p).fileName(), this, [this, p] { openProject(p); })->setToolTip(p);
    m_recentMenu->setEnabled(!m_recentMenu->isEmpty());
}

QString MainWindow::projectPath() const { return m_store ? QString::fromStdString(m_store->path().string()) : QString(); }

void MainWindow::updateTitle() {
    QString title = QStringLiteral("Quire");
    if (m_store) {
        title = QFileInfo(projectPath()).fileName() + QStringLiteral(" — Quire");
        if (m_running) title += tr(" [transcribing]");
        else if (auto c = m_store->counts(); c && c->queued > 0) title += tr(" [%1 pages to do]").arg(c->queued);
        if (m_store->readOnly()) title += tr(" [read-only]");
    }
    setWindowTitle(title);
}

void MainWindow::updateActions() {
    const bool open = bool(m_store);
    m_startAct->setEnabled(open && !m_running && !m_store->readOnly());
    m_pauseAct->setEnabled(m_running);
    m_cancelAct->setEnabled(m_running);
    m_progress->setVisible(m_running);
    m_exportAct->setEnabled(open);
    m_propertiesAct->setEnabled(open && !m_store->readOnly());
    m_proofAct->setEnabled(open && m_currentRow >= 0);
    m_historyAct->setEnabled(open && m_currentRow >= 0 && !m_store->readOnly());
    if (m_arranger) m_arranger->refresh();
    if (m_rereadAct) m_rereadAct->setEnabled(open && !m_running && !m_store->readOnly() && m_currentRow >= 0);
    if (m_regionTools) m_regionTools->refresh();
}

std::vector<int64_t> MainWindow::chosenPages() const {
    std::vector<int> rows;
    for (const QModelIndex& i : m_list->selectionModel()->selectedIndexes()) rows.push_back(m_proxy->mapToSource(i).row());
    if (rows.empty() && m_currentRow >= 0) rows.push_back(m_currentRow);
    std::sort(rows.begin(), rows.end());
    std::vector<int64_t> ids;
    for (const int r : rows)
        if (const PageRecord* p = m_model->page(r)) ids.push_back(p->id);
    return ids;
}

void MainWindow::onPagesArranged(const QString& summary, const std::vector<int64_t>& chosen) {
    const qint64 keep = chosen.empty() ? m_currentPageId : chosen.front();
    const int oldRow = m_currentRow;
    reloadPages();
    int row = m_model->rowOf(keep);
    if (row < 0) row = std::clamp(oldRow, 0, std::max(0, m_model->rowCount() - 1));
    m_currentRow = -1;  // its place or its turn changed: shown afresh
    m_currentPageId = -1;
    goToRow(row);
    for (const int64_t id : chosen) {
        const QModelIndex idx = m_proxy->mapFromSource(m_model->index(m_model->rowOf(id)));
        if (idx.isValid()) m_list->selectionModel()->select(idx, QItemSelectionModel::Select);
    }
    log(summary.left(1).toUpper() + summary.mid(1));
    updateActions();
}

void MainWindow::log(const QString& message, bool warning) {
    if (m_log->document()->isEmpty() && !m_logDock->isVisible()) {
        m_engineDock->show();
        m_logDock->show();
        m_logDock->raise();
    }
    m_log->appendPlainText(QDateTime::currentDateTime().toString("HH:mm:ss ") + (warning ? tr("warning: ") : QString()) + message);
}

void MainWindow::showError(const QString& message) {
    m_lastError = message;
    log(message, true);
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Quire"), message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();  // never blocks the event loop (or a test)
}

void MainWindow::goToRow(int row) {
    if (row < 0 || row >= m_model->rowCount()) return;
    const QModelIndex idx = m_proxy->mapFromSource(m_model->index(row));
    if (idx.isValid()) m_list->setCurrentIndex(idx);
    else showRow(row);  // filtered out of the list: show it anyway
}

void MainWindow::showRow(int row) {
    const PageRecord* p = m_model->page(row);
    if (!p || !m_store) return;
    if (row == m_currentRow && p->id == m_currentPageId) return;
    m_editor->flush();
    m_currentRow = row;
    m_currentPageId = p->id;
    m_imageShownFor = -1;
    loadEditor(p->id);
    updateFlagNote();
    const PageRecord copy = *p;
    m_imageWatcher.setFuture(QtConcurrent::run([copy] { return loadPageImage(copy); }));
    updateActions();
    statusBar()->showMessage(tr("Page %1: %2").arg(p->sequence).arg(QString::fromStdString(p->sourceFile)), 4000);
}

void MainWindow::updateFlagNote() {
    const PageRecord* p = m_model->page(m_currentRow);
    if (!p || p->id != m_currentPageId || p->status != PageStatus::Done || !p->flagged || p->proofread) {
        m_flagNote->hide();
        return;
    }
    m_flagNote->setText(p->flagReason.empty() ? tr("Flagged for proofreading")
                                              : tr("Flagged for proofreading: %1").arg(QString::fromStdString(p->flagReason)));
    m_flagNote->show();
}

void MainWindow::loadEditor(qint64 pageId) {
    auto text = m_store->effectiveText(pageId);
    auto layout = m_store->layout(pageId);
    // Spelling in the languages this page was read in (a page read again in German is checked in
    // German), else the project's.
    const QString languages = layout && !layout->language.empty() ? QString::fromStdString(layout->language) : projectLanguages();
    if (languages != m_editor->spellLanguage()) m_editor->setSpellLanguage(languages);
    m_editor->setPage(pageId, QString::fromStdString(text ? *text : std::string()), layout ? *layout : PageText(), 60.0f);
    m_editor->setReadOnly(m_store->readOnly());
}

void MainWindow::showFind() {
    m_findDock->show();
    m_findDock->raise();
    m_find->focusQuery();
}

bool MainWindow::nextDoubtfulWord() {
    if (!m_store) return false;
    if (m_editor->selectNextDoubtfulWord(false)) return true;
    // The pages after this one, then from the start of the book round to this page.
    const int n = m_model->rowCount();
    for (int k = 1; k <= n; ++k) {
        const int r = (std::max(m_currentRow, 0) + k) % n;
        const PageRecord* p = m_model->page(r);
        if (!p || p->status != PageStatus::Done) continue;
        auto text = m_store->effectiveText(p->id);
        auto layout = m_store->layout(p->id);
        if (!text || !layout || !m_editor->hasDoubtfulWord(QString::fromStdString(*text), *layout)) continue;
        goToRow(r);
        m_editor->moveCursor(QTextCursor::Start);
        return m_editor->selectNextDoubtfulWord(false);
    }
    return false;
}

bool MainWindow::nextFlagged() {
    for (int r = m_currentRow + 1; r < m_model->rowCount(); ++r)
        if (m_model->page(r)->flagged && !m_model->page(r)->proofread) {
            goToRow(r);
            return true;
        }
    statusBar()->showMessage(tr("No flagged page after this one"), 3000);
    return false;
}

bool MainWindow::previousFlagged() {
    for (int r = m_currentRow - 1; r >= 0; --r)
        if (m_model->page(r)->flagged && !m_model->page(r)->proofread) {
            goToRow(r);
            return true;
        }
    statusBar()->showMessage(tr("No flagged page before this one"), 3000);
    return false;
}

void MainWindow::markProofread() {
    const PageRecord* p = m_model->page(m_currentRow);
    if (!p || !m_store) return;
    m_editor->flush();
    if (Status s = m_store->setProofread(p->id, !p->proofread); !s) {
        showError(QString::fromStdString(s.message()));
        return;
    }
    if (auto rec = m_store->page(p->id)) m_model->updatePage(*rec);
    updateFlagNote();
    if (m_model->page(m_currentRow)->proofread) nextFlagged();
}

void MainWindow::changePageQueue(bool retry) {
    const PageRecord* p = m_model->page(m_currentRow);
    if (!p || !m_store) return;
    if (m_running) {
        showError(tr("Wait until the run ends (or cancel it) to change which pages it reads."));
        return;
    }
    if (Status s = retry ? m_store->retryPage(p->id) : m_store->skipPage(p->id); !s) {
        showError(QString::fromStdString(s.message()));
        return;
    }
    if (auto rec = m_store->page(p->id)) m_model->updatePage(*rec);
    log(retry ? tr("Page %1 queued again; Start reads it.").arg(p->sequence)
                    : tr("Page %1 skipped; runs leave it alone until it is read again.").arg(p->sequence));
}

bool MainWindow::revertCurrentPage(int version) {
    if (!m_store || m_currentPageId < 0) return false;
    m_editor->flush();
    auto id = revertPage(*m_store, m_currentPageId, version);
    if (!id) {
        showError(tr("The page could not be reverted: %1").arg(QString::fromStdString(id.status().message())));
        return false;
    }
    if (auto rec = m_store->page(m_currentPageId)) m_model->updatePage(*rec);
    loadEditor(m_currentPageId);
    log(tr("Page %1 reverted to version %2").arg(m_model->page(m_currentRow)->sequence).arg(version));
    return true;
}

void MainWindow::showPageHistory() {
    if (!m_store || m_currentPageId < 0) return;
    m_editor->flush();
    auto versions = pageVersions(*m_store, m_currentPageId);
    if (!versions) {
        showError(QString::fromStdString(versions.status().message()));
        return;
    }
    PageHistoryDialog dlg(std::move(*versions), m_model->page(m_currentRow)->sequence, this);
    if (dlg.exec() == QDialog::Accepted && dlg.chosenVersion() >= 0) revertCurrentPage(dlg.chosenVersion());
}

void MainWindow::showSettingsDialog() {
    SettingsDialog dlg(*m_settings, this);
    if (dlg.exec() == QDialog::Accepted) m_editor->setSpellLanguage(m_settings->languages());
}

void MainWindow::closeEvent(QCloseEvent* e) {
    m_editor->flush();
    saveUiState();
    if (m_running) {
        m_worker->cancel();
        QElapsedTimer t;
        t.start();
        while (m_running && t.elapsed() < 60000) QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    }
    m_settings->setWindowGeometry(saveGeometry());
    m_settings->setWindowState(saveState());
    e->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
    if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
    QStringList files;
    for (const QUrl& u : e->mimeData()->urls())
        if (u.isLocalFile()) files << u.toLocalFile();
    if (files.isEmpty()) return;
    if (files.size() == 1 && files.first().endsWith(".quire")) {
        openProject(files.first());
        return;
    }
    const QString project = QFileDialog::getSaveFileName(this, tr("Save the new project as"),
                                                         QFileInfo(files.first()).absolutePath() + "/" +
                                                             QFileInfo(files.first()).completeBaseName() + ".quire",
                                                         tr("Quire projects (*.quire)"));
    if (!project.isEmpty()) newProject(files, project);
}

}  // namespace quire::ui
