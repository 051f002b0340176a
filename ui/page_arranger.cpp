// Page arrangement in the GUI, over page_arrangement.h.
#include "page_arranger.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QWidget>

#include <algorithm>
#include <set>

#include "quire/store/page_arrangement.h"

namespace quire::ui {

PageArranger::PageArranger(Context context, QWidget* parent)
    : QObject(parent), m_context(std::move(context)), m_parent(parent) {
    auto make = [this](const QString& text, const char* name, const QKeySequence& key, auto slot) {
        auto* a = new QAction(text, this);
        a->setObjectName(name);
        if (!key.isEmpty()) a->setShortcut(key);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };
    m_clockwise = make(tr("Rotate &Clockwise"), "rotateClockwiseAction", QKeySequence(Qt::CTRL | Qt::Key_BracketRight),
                       [this] { rotate(90); });
    m_counter = make(tr("Rotate C&ounterclockwise"), "rotateCounterclockwiseAction",
                     QKeySequence(Qt::CTRL | Qt::Key_BracketLeft), [this] { rotate(270); });
    m_half = make(tr("Rotate &180°"), "rotateHalfAction", {}, [this] { rotate(180); });
    m_remove = make(tr("&Remove from Book"), "removePagesAction", QKeySequence::Delete, [this] { removeChosen(); });
    m_up = make(tr("Move &Up"), "movePagesUpAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Up),
                [this] { moveChosenBy(-1); });
    m_down = make(tr("Move &Down"), "movePagesDownAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Down),
                  [this] { moveChosenBy(1); });
    m_add = make(tr("&Add Scans After This Page…"), "addScansAction", {}, [this] {
        const QStringList files = QFileDialog::getOpenFileNames(
            m_parent, tr("Add scans"), {}, tr("Scans (*.pdf *.tif *.tiff *.png *.jpg *.jpeg *.bmp);;All files (*)"));
        if (!files.isEmpty()) addScans(files);
    });
    m_undo = make(tr("U&ndo Page Change"), "undoPageChangeAction", {}, [this] { undo(); });
    m_restore = new QMenu(tr("Put &Back a Removed Page"), parent);
    m_restore->setObjectName("restorePagesMenu");
    connect(m_restore, &QMenu::aboutToShow, this, [this] {
        m_restore->clear();
        ProjectStore* store = m_context.store();
        auto removed = store ? removedPages(*store) : Result<std::vector<PageRecord>>(std::vector<PageRecord>{});
        if (!removed) return;
        for (const auto& pg : *removed) {
            const QString name = QFileInfo(QString::fromStdString(pg.sourceFile)).fileName();
            auto* a = m_restore->addAction(tr("%1, page %2").arg(name).arg(pg.filePage + 1));
            connect(a, &QAction::triggered, this, [this, id = pg.id] { restore(id); });
        }
    });
    // Delete and the moves act on the page list only: in the editor those keys are the text's.
    for (QAction* a : {m_remove, m_up, m_down}) a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
}

void PageArranger::addTo(QMenu* menu, QWidget* list) {
    menu->addActions({m_clockwise, m_counter, m_half});
    menu->addSeparator();
    menu->addActions({m_up, m_down, m_remove});
    menu->addSeparator();
    menu->addAction(m_add);
    menu->addMenu(m_restore);
    menu->addAction(m_undo);
    list->addActions({m_clockwise, m_counter, m_remove, m_up, m_down, m_undo});
}

void PageArranger::refresh() {
    ProjectStore* store = m_context.store();
    const bool can = store && !store->readOnly() && !m_context.running();
    for (QAction* a : {m_clockwise, m_counter, m_half, m_remove, m_up, m_down, m_add}) a->setEnabled(can);
    std::optional<ArrangementEdit> last;
    if (store)
        if (auto l = lastArrangement(*store)) last = *l;
    bool anyRemoved = false;
    if (store)
        if (auto removed = removedPageCount(*store)) anyRemoved = *removed > 0;
    m_restore->setEnabled(can && anyRemoved);
    m_undo->setEnabled(can && last.has_value());
    m_undo->setText(last ? tr("U&ndo Page Change: %1").arg(QString::fromStdString(last->summary)) : tr("U&ndo Page Change"));
}

bool PageArranger::ready() {
    ProjectStore* store = m_context.store();
    if (!store || store->readOnly()) return false;
    if (m_context.running()) {
        m_context.showError(tr("Wait until the run ends (or cancel it) to rearrange the pages."));
        return false;
    }
    m_context.flushEdits();
    return true;
}

bool PageArranger::done(const Result<ArrangementEdit>& edit, const std::vector<int64_t>& chosen, const QString& note) {
    if (!edit) {
        m_context.showError(QString::fromStdString(edit.status().message()));
        return false;
    }
    if (edit->id == 0) return false;  // nothing changed (pages dropped where they were)
    refresh();
    emit arranged(QString::fromStdString(edit->summary) + note, chosen);
    return true;
}

bool PageArranger::rotate(int clockwiseDegrees) {
    if (!ready()) return false;
    const auto chosen = m_context.chosenPages();
    if (chosen.empty()) return false;
    return done(rotatePages(*m_context.store(), chosen, clockwiseDegrees), chosen,
                tr("; Run → Start reads it again the right way up (its corrections stay)"));
}

bool PageArranger::removeChosen() {
    if (!ready()) return false;
    const auto chosen = m_context.chosenPages();
    if (chosen.empty()) return false;
    return done(removePages(*m_context.store(), chosen), {});
}

bool PageArranger::moveChosen(int before) { return move(m_context.chosenPages(), before); }

bool PageArranger::move(const std::vector<int64_t>& pageIds, int before) {
    if (pageIds.empty() || !ready()) return false;
    return done(movePages(*m_context.store(), pageIds, before), pageIds);
}

bool PageArranger::moveChosenBy(int step) {
    if (!ready()) return false;
    const auto chosen = m_context.chosenPages();
    auto pages = m_context.store()->pages();
    if (chosen.empty() || !pages) return false;
    // The chosen pages' first and last places; up: before the page above the first; down: after
    // the page below the last.
    const std::set<int64_t> ids(chosen.begin(), chosen.end());
    int first = 0, last = 0;
    for (const auto& p : *pages)
        if (ids.count(p.id)) {
            if (!first) first = p.sequence;
            last = p.sequence;
        }
    if (step < 0 && first <= 1) return false;
    if (step > 0 && last >= int(pages->size())) return false;
    return moveChosen(step < 0 ? first - 1 : last + 2);
}

bool PageArranger::addScans(const QStringList& files) {
    if (!ready()) return false;
    ProjectStore& store = *m_context.store();
    auto before = store.pages();
    if (!before) return false;
    std::set<int64_t> had;
    for (const auto& p : *before) had.insert(p.id);
    TranscribeParams params = m_context.params();
    params.inputs.clear();
    for (const QString& f : files) params.inputs.push_back(f.toStdString());
    if (Status s = registerInputs(store, params); !s) {
        m_context.showError(QString::fromStdString(s.message()));
        return false;
    }
    auto after = store.pages();
    if (!after) return false;
    std::vector<int64_t> added;
    for (const auto& p : *after)
        if (!had.count(p.id)) added.push_back(p.id);
    if (added.empty()) {
        m_context.showError(tr("These scans are in the project already."));
        return false;
    }
    // They came at the end of the book; from there, after the current page.
    const int current = m_context.currentSequence();
    if (current > 0 && current < int(before->size())) {
        if (!done(movePages(store, added, current + 1), added)) return false;
    } else {
        refresh();
        emit arranged(tr("added %n page(s) at the end of the book", nullptr, int(added.size())), added);
    }
    emit scansAdded();
    return true;
}

bool PageArranger::undo() {
    if (!ready()) return false;
    auto undone = undoArrangement(*m_context.store());
    if (!undone) {
        m_context.showError(QString::fromStdString(undone.status().message()));
        return false;
    }
    if (!*undone) return false;
    refresh();
    emit arranged(tr("undone: %1").arg(QString::fromStdString((*undone)->summary)), {});
    return true;
}

bool PageArranger::restore(int64_t pageId) {
    if (!ready()) return false;
    return done(restorePages(*m_context.store(), {pageId}), {pageId});
}

}  // namespace quire::ui
